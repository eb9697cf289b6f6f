package config

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse protects the promise that no file, however broken, crashes the
// loader or yields anything but a config or positioned, sorted, repeatable
// errors.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../testdata/config/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	for _, s := range []string{
		minimal,
		"",
		"sources: [{name: a, start_urls: [\"http://x/\"], crawl_rules: [{match: {not: {not: {and: [{length: {value: \"[1:]\"}}]}}}, priority: 1}]}]",
		"x-a: &a {<<: *a}\nsources: *a\n",
		"sources:\n  - &s {name: a, start_urls: [\"http://x/\"], politeness: {<<: [*s, *s]}}\n",
		"elasticsearch: ~\nsources:\n  - name: a\n    start_urls: [http://x/]\n    headers: {? [a] : b}\n",
		"fetch: {max_body_bytes: 9999999999GiB, timeout: -1h}\n",
		"sources: [{name: a, start_urls: [\"http://x/\"], max_link_depth: 0x10, max_age: 1e3}]",
		"%YAML 1.2\n---\nsources: !!map {}\n",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		c, err := Parse("f.yaml", data)
		if (c == nil) == (err == nil) {
			t.Fatalf("config %v and error %v: want exactly one", c != nil, err)
		}
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %v is not a non-empty config.Errors", err, err)
			}
			for i, e := range es {
				if e.File != "f.yaml" || e.Msg == "" {
					t.Fatalf("malformed error %+v", e)
				}
				if i > 0 && (e.Line < es[i-1].Line || e.Line == es[i-1].Line && e.Column < es[i-1].Column) {
					t.Fatalf("errors out of file order:\n%v", es)
				}
			}
			_, again := Parse("f.yaml", data)
			if again == nil || again.Error() != err.Error() {
				t.Fatalf("errors differ between two parses:\n%v\n---\n%v", err, again)
			}
			return
		}
		for i := range c.Sources {
			s := &c.Sources[i]
			if s.Index != i || c.SourceByName(s.Name) != s {
				t.Fatalf("source %d: index %d", i, s.Index)
			}
			if a, b := Fingerprint(s), Fingerprint(s); a != b {
				t.Fatal("fingerprint is not deterministic")
			}
		}
	})
}
