package urlnorm

import (
	"net/url"
	"strings"
	"testing"
)

// slowResolve is the reference behaviour: net/url all the way.
func slowResolve(base *url.URL, ref string) (string, bool) {
	b := Base{u: base} // no origin: the fast path is off
	return b.Resolve(ref)
}

var resolveBases = []string{
	"http://www.example.test/docs/guide/page.html",
	"https://Docs.Example.test:8443/a/b/",
	"http://www.example.test",
	"http://www.example.test/",
	"http://www.example.test/a%20b/c%41.html?x=1",
	"http://www.example.test/odd/../path/x.html",
	"http://user:pw@www.example.test/private/",
}

var resolveRefs = []string{
	"intro.html", "sub/dir/page.html", "page.html?a=1&b=2", "/root.html", "/", "?q=1", "?",
	"../up.html", "./here.html", ".", "..", "a/./b", "a/../b", "//cdn.example.test/x",
	"http://Other.Example.test/Path", "HTTPS://other.example.test", "http://other.example.test?x",
	"http://other.example.test:8080/p?q#f", "http://user@other.example.test/", "http://[::1]/x",
	"http://h:/x", "http:relative", "https:/one-slash", "a b.html", "a%20b.html", "a%zz.html",
	"%E2%82%AC.html", "€.html", "a|b.html", "page.html?q=a b", "page.html?q=%", "page.html?q=%41",
	"page.html#frag", "page.html#%zz", "mailto:x@example.test", "javascript:void(0)", "tel:1",
	"a:b/c", "./a:b", "/a:b", "seg;param/x", "~user/", "(parens)*'!$,=@.html", "a\\b", "[x]",
	"http://www.example.test/a/../b", "http://www.example.test/./", "/a//b", "a//b", "",
	"#only", "http://", "http:///x", "http://h..x/", "http://-h-/", "HTTP://H/P?Q",
}

var extraRefs = []string{
	"../a/./b/../c.html", "./", "../", "../../../../x", "a/..", "a/.", "/./a", "/../a", "//", "..//x",
	"http://other.example.test/a/../../b?x#y", "http://other.example.test/.", "?x=../y", "./a?b/../c",
}

func TestFastLinkResolutionAgreesWithNetURL(t *testing.T) {
	for _, bs := range resolveBases {
		base, err := url.Parse(bs)
		if err != nil {
			t.Fatal(err)
		}
		lb := NewBase(base)
		for _, ref := range append(resolveRefs, extraRefs...) {
			got, gok := lb.Resolve(ref)
			want, wok := slowResolve(base, ref)
			if got != want || gok != wok {
				t.Errorf("base %s ref %q: fast gives %q %v, net/url %q %v", bs, ref, got, gok, want, wok)
			}
		}
	}
}

func FuzzLinkResolution(f *testing.F) {
	for _, r := range resolveRefs {
		f.Add(r)
	}
	bases := make([]*url.URL, len(resolveBases))
	for i, bs := range resolveBases {
		bases[i], _ = url.Parse(bs)
	}
	f.Fuzz(func(t *testing.T, ref string) {
		for _, base := range bases {
			lb := NewBase(base)
			got, gok := lb.Resolve(ref)
			want, wok := slowResolve(base, ref)
			if got != want || gok != wok {
				t.Fatalf("base %s ref %q: fast gives %q %v, net/url %q %v", base, ref, got, gok, want, wok)
			}
			if !gok {
				continue
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
		"data:text/html,hi":            "",
		"ftp://ftp.example.test/":      "",
		"#top":                         "",
		"HTTP://WWW.Example.TEST/Path": "http://www.example.test/Path",
	} {
		got, ok := lb.Resolve(ref)
		if got != want || ok != (want != "") {
			t.Errorf("%q: got %q %v, want %q", ref, got, ok, want)
		}
	}
}
