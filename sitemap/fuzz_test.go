package sitemap

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// FuzzParse checks that no input panics, breaks a limit or yields an
// entry that is not an absolute http(s) URL.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("testdata", "*"))
	for _, name := range files {
		b, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
		f.Add(gzipBytes(f, b))
	}
	f.Add([]byte("<urlset><url><loc>https://a.example/</loc><lastmod>2024-01-01T00:00:00+01:00</lastmod></url></urlset>"))
	f.Add([]byte("<rss><channel><item><link>/x</link><pubDate>Mon, 1 Jan 24 00:00 PST</pubDate></item></channel></rss>"))
	f.Add([]byte("<feed xml:base='http://a.example/b/'><entry xml:base='../c/'><link href='d'/></entry></feed>"))
	f.Add([]byte{0xff, 0xfe, '<', 0, 'a', 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		lim := Limits{MaxBytes: 64 << 10, MaxURLs: 8}
		res, err := Parse(bytes.NewReader(b), feedURL, lim)
		if res == nil {
			t.Fatalf("nil Result (err %v)", err)
		}
		if res.Bytes > lim.MaxBytes {
			t.Errorf("read %d bytes, cap %d", res.Bytes, lim.MaxBytes)
		}
		n := len(res.URLs) + len(res.Sitemaps)
		if n > lim.MaxURLs {
			t.Errorf("%d entries, cap %d", n, lim.MaxURLs)
		}
		switch res.Truncated {
		case "", TruncatedBytes:
		case TruncatedURLs:
			if n != lim.MaxURLs {
				t.Errorf("truncated at %d entries, cap %d", n, lim.MaxURLs)
			}
		default:
			t.Errorf("Truncated = %q", res.Truncated)
		}
		if res.Kind != Index && len(res.Sitemaps) > 0 || res.Kind == Index && len(res.URLs) > 0 {
			t.Errorf("a %v with %d URLs and %d sitemaps", res.Kind, len(res.URLs), len(res.Sitemaps))
		}
		for _, e := range append(res.URLs, res.Sitemaps...) {
			if !isAbsHTTP(e.URL) {
				t.Errorf("entry %q is not an absolute http(s) URL", e.URL)
			}
			if !e.Lastmod.IsZero() && e.Lastmod.Location() != time.UTC {
				t.Errorf("Lastmod %v not in UTC", e.Lastmod)
			}
		}
	})
}

// FuzzDates checks the date parsers never panic and only return dates they
// could have read.
func FuzzDates(f *testing.F) {
	for _, s := range []string{"2024", "2024-02-29T13:45:30.25-05:30", "2024-02-30", "Wed, 01 May 2024 09:30:00 +0200",
		"Friday, 03-May-24 08:00:00 EST", "2 May 2024 10:00 GMT", "1 Jan 2024 25:00 +9999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for name, parse := range map[string]func(string) (time.Time, bool){"W3C": parseW3C[string], "RFC 822": parseRFC822} {
			d, ok := parse(s)
			if !ok && !d.IsZero() {
				t.Errorf("%s(%q) = %v, %v", name, s, d, ok)
			}
			if ok && (d.Year() < -1 || d.Year() > 10000 || d.Location() != time.UTC) {
				t.Errorf("%s(%q) = %v", name, s, d)
			}
		}
	})
}
