package config

import (
	"slices"
	"testing"
)

// Tika is told which types it reads, and they join a source's default
// mime_types; a source that names its own keeps them.
func TestTikaTypesJoinTheDefaultMimeTypes(t *testing.T) {
	c := mustParse(t, "c.yaml", "documents: {tika: {url: \"http://127.0.0.1:9998\", types: [application/msword]}}\n"+
		minimal+"  - name: b\n    start_urls: [\"http://example.org/\"]\n    mime_types: [text/html]\n")
	if got := c.Sources[0].MimeTypes; !slices.Equal(got, append(slices.Clone(BuiltinTypes), "application/msword")) {
		t.Errorf("default mime_types with Tika %q", got)
	}
	if got := c.Sources[1].MimeTypes; !slices.Equal(got, []string{"text/html"}) {
		t.Errorf("a source's own mime_types became %q", got)
	}
}

func TestTikaSettingsAreCheckedWhereTheyAreWritten(t *testing.T) {
	for _, tc := range []struct {
		yaml      string
		line, col int
		path, msg string
	}{
		{"documents: {tika: {url: \"ftp://tika\", types: [application/msword]}}", 1, 25, "documents.tika.url", "must be an absolute http:// or https:// URL"},
		{"documents: {tika: {url: \"http://127.0.0.1:9998\"}}", 1, 19, "documents.tika.types", "must name the media types Tika reads"},
		{"documents: {tika: {types: [application/msword]}}", 1, 19, "documents.tika.url", "is required when documents.tika.types names types"},
		{"documents: {tika: {url: \"http://127.0.0.1:9998\", types: [application/pdf]}}", 1, 58, "documents.tika.types[0]", "application/pdf is read by crawlspace itself"},
		{"documents: {tika: {url: \"http://127.0.0.1:9998\", types: [\"application/*\"]}}", 1, 58, "documents.tika.types[0]", "\"application/*\" is not a MIME type"},
	} {
		oneErrorAt(t, tc.yaml+"\n"+minimal, tc.line, tc.col, tc.path, tc.msg)
	}
}
