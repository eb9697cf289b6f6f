package redact_test

import (
	"errors"
	"net/url"
	"strings"
	"syscall"
	"testing"

	"github.com/crawlspace/crawlspace/internal/redact"
)

func TestURLsMasksTheUserInformationOfEveryURLAndNothingElse(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://user:secret@127.0.0.1:9200", "http://xxxxx@127.0.0.1:9200"},
		{`Get "https://u:p@ss@proxy:3128/x?a=b@c": EOF`, `Get "https://xxxxx@proxy:3128/x?a=b@c": EOF`},
		{"elasticsearch http://a:1@h1:9200,https://token@h2:9243/base", "elasticsearch http://xxxxx@h1:9200,https://xxxxx@h2:9243/base"},
		{"socks5://u:p@127.0.0.1:1080 refused", "socks5://xxxxx@127.0.0.1:1080 refused"},
		{"mailto:someone@example.org and http://example.org/a@b", "mailto:someone@example.org and http://example.org/a@b"},
		{"no url here, just user@host", "no url here, just user@host"},
	} {
		if got := redact.URLs(tc.in); got != tc.want {
			t.Errorf("URLs(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

func TestErrorRedactsTheMessageAndKeepsWhatItWraps(t *testing.T) {
	//lint:ignore SA1007 a URL that does not parse is the case tested
	_, perr := url.Parse("http://user:secret@host:badport")
	err := redact.Error(perr)
	if strings.Contains(err.Error(), "secret") || !strings.Contains(err.Error(), "xxxxx@host:badport") {
		t.Errorf("redacted parse error %q", err)
	}
	var ue *url.Error
	if !errors.As(err, &ue) {
		t.Error("the redacted error no longer unwraps to the *url.Error")
	}
	clean := &url.Error{Op: "Get", URL: "http://host/", Err: syscall.ECONNREFUSED}
	if got := redact.Error(clean); got != error(clean) || !errors.Is(got, syscall.ECONNREFUSED) {
		t.Errorf("an error without credentials came back as %v", got)
	}
	if redact.Error(nil) != nil {
		t.Error("Error(nil) is not nil")
	}
}
