package urlnorm

import (
	"net/url"
	"strings"
	"testing"
)

var resolveBases = []string{
	"http://www.example.test/docs/guide/page.html",
	"https://Docs.Example.test:8443/a/b/",
	"http://www.example.test",
	"http://www.example.test/",
	"http://www.example.test/a%20b/c%41.html?x=1",
	"http://www.example.test/odd/../path/x.html",
	"http://user:pw@www.example.test/private/",
	"http://[2001:db8::1]:8080/v6/",
}

var resolveRefs = []string{
	"intro.html", "sub/dir/page.html", "page.html?a=1&b=2", "/root.html", "/", "?q=1", "?",
	"../up.html", "./here.html", ".", "..", "a/./b", "a/../b", "//cdn.example.test/x",
	"http://Other.Example.test/Path", "HTTPS://other.example.test", "http://other.example.test?x",
	"http://other.example.test:8080/p?q#f", "http://user@other.example.test/", "http://[::1]/x",
	"http://h:/x", "http:relative", "https:/one-slash", "a b.html", "a%20b.html", "a%zz.html",
	"%E2%82%AC.html", "€.html", "a|b.html", "page.html?q=a b", "page.html?q=%", "page.html?q=%41",
	"page.html#frag", "page.html#%zz", "mailto:x@example.test", "javascript:void(0)", "tel:1",
	"a:b/c", "./a:b", "/a:b", "1a:b", ":x", "seg;param/x", "~user/", "(parens)*'!$,=@.html", "a\\b", "[x]",
	"http://www.example.test/a/../b", "http://www.example.test/./", "/a//b", "a//b", "",
	"#only", "http://", "http:///x", "http://h..x/", "http://-h-/", "HTTP://H/P?Q", "\\\\host\\x",
	"///host/y", " \t/a\n/b ", "/50%off.html", "images\\photo.html", "?b=2&a=1&b=1", "?q='x'",
	"http://2130706433/", "http://0x7f.1:80/", "http://bücher.example/", "http://xn--bcher-kva.example/",
}

// Links resolve as browsers resolve them: what the issue that brought the
// URL Standard here found, and the standard's other corners.
func TestLinksResolveAsBrowsersDo(t *testing.T) {
	lb, _ := ParseBase("http://site.example/docs/page.html?view=1")
	for ref, want := range map[string]string{
		`images\photo.html`:        "http://site.example/docs/images/photo.html",
		"/50%off.html":             "http://site.example/50%25off.html",
		"/search?q=a&section=news": "http://site.example/search?q=a&section=news",
		"/list?sort=asc&page=2":    "http://site.example/list?sort=asc&page=2",
		"http:other.html":          "http://site.example/docs/other.html",
		"http:/root.html":          "http://site.example/root.html",
		"https:elsewhere.example":  "https://elsewhere.example/",
		"///host.example/x":        "http://host.example/x",
		`\\host.example\x`:         "http://host.example/x",
		"1a:b":                     "http://site.example/docs/1a:b",
		" \x01/a\t/b\n.html ":      "http://site.example/a/b.html",
		"?":                        "http://site.example/docs/page.html?",
		"../%2e%2E/x":              "http://site.example/x",
		"http://0177.0.1/":         "http://127.0.0.1/",
		"http://[0:0::ffff:a00:1]": "http://[::ffff:a00:1]/",
		"http://EXAMPLE.test:80/":  "http://example.test/",
		"http://a/?q='x'":          "http://a/?q=%27x%27",
	} {
		got, ok := lb.Resolve(ref)
		if !ok || got != want {
			t.Errorf("%q: got %q %v, want %q", ref, got, ok, want)
		}
	}
	for _, ref := range []string{"http://a b/", "http://a<b/", "http://a%25b/", "http://[::1/", "http://a:99999/", "http://1.2.3.4.5/", "http://@/x", "http:", "https://xn--ls8h%/"} {
		if got, ok := lb.Resolve(ref); ok && ref != "http:" || ref == "http:" && got != "http://site.example/docs/page.html?view=1" {
			t.Errorf("%q resolved to %q, want none", ref, got)
		}
	}
}

func FuzzLinkResolution(f *testing.F) {
	for _, r := range resolveRefs {
		f.Add(r)
	}
	bases := make([]Base, len(resolveBases))
	for i, bs := range resolveBases {
		var ok bool
		if bases[i], ok = ParseBase(bs); !ok {
			f.Fatalf("base %s", bs)
		}
	}
	f.Fuzz(func(t *testing.T, ref string) {
		for i, lb := range bases {
			got, ok := lb.Resolve(ref)
			bytes, bok := lb.AppendResolved([]byte("x"), []byte(ref))
			if ok != bok || bok && string(bytes[1:]) != got || !bok && string(bytes) != "x" {
				t.Fatalf("base %s ref %q: Resolve %q %v, AppendResolved %q %v", resolveBases[i], ref, got, ok, bytes, bok)
			}
			if !ok {
				continue
			}
			if again, err := Found(got); err != nil || again != got {
				t.Fatalf("ref %q gave %q, which reads as %q, %v", ref, got, again, err)
			}
			if loc, err := Resolve(resolveBases[i], ref); err != nil || loc != got {
				t.Fatalf("ref %q: link %q, Location %q, %v", ref, got, loc, err)
			}
			u, err := url.Parse(got)
			if err != nil || u.User != nil || strings.Contains(got, "#") || (u.Scheme != "http" && u.Scheme != "https") {
				t.Fatalf("ref %q gave %q: not a plain http(s) URL (%v)", ref, got, err)
			}
		}
	})
}

func TestLinksSkipOtherSchemesAndStripFragmentsAndCredentials(t *testing.T) {
	base, _ := url.Parse("http://www.example.test/dir/page.html")
	lb := NewBase(base)
	for ref, want := range map[string]string{
		"other.html#x":                 "http://www.example.test/dir/other.html",
		"https://u:p@secure.test/a":    "https://secure.test/a",
		"mailto:a@example.test":        "",
		"JavaScript:alert(1)":          "",
		"java\tscript:alert(1)":        "",
		"data:text/html,hi":            "",
		"ftp://ftp.example.test/":      "",
		"ws://ws.example.test/":        "",
		"#top":                         "",
		" #top":                        "",
		"":                             "",
		"HTTP://WWW.Example.TEST/Path": "http://www.example.test/Path",
	} {
		got, ok := lb.Resolve(ref)
		if got != want || ok != (want != "") {
			t.Errorf("%q: got %q %v, want %q", ref, got, ok, want)
		}
	}
}

// A page's links resolve into the caller's buffer: nothing is allocated
// for a link, kept or not.
func TestResolvingALinkAllocatesNothing(t *testing.T) {
	lb, _ := ParseBase("http://www.example.test/docs/guide/page.html")
	buf := make([]byte, 0, 512)
	for _, ref := range []string{"../reference/item-1?x=1&y=2#frag", "/section/3/", "https://Social.Example.test/share?u=x", "mailto:x@example.test", "a%zz b.html", " /a\n/b "} {
		ref := []byte(ref)
		if n := testing.AllocsPerRun(100, func() { buf, _ = lb.AppendResolved(buf[:0], ref) }); n != 0 {
			t.Errorf("%q: %v allocations", ref, n)
		}
	}
}
