package urlnorm

import (
	"errors"
	"net/url"
	"testing"
)

func TestNormalizeGivesOneSpellingPerPage(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://example.com/", "http://example.com/"},
		{"HTTP://Example.COM/Path", "http://example.com/Path"},
		{"http://example.com", "http://example.com/"},
		{"http://example.com:80/a", "http://example.com/a"},
		{"https://example.com:443/a", "https://example.com/a"},
		{"http://example.com:443/a", "http://example.com:443/a"},
		{"http://example.com:/a", "http://example.com/a"},
		{"http://example.com:0080/a", "http://example.com/a"},
		{"http://example.com:08080/a", "http://example.com:8080/a"},
		{"http://user:secret@example.com/a", "http://example.com/a"},
		{"http://example.com/a#frag", "http://example.com/a"},
		{"http://example.com/a?b=1#frag", "http://example.com/a?b=1"},
		{"http://example.com/a/./b/../c", "http://example.com/a/c"},
		{"http://example.com/a/b/..", "http://example.com/a/"},
		{"http://example.com/a/.", "http://example.com/a/"},
		{"http://example.com/../../a", "http://example.com/a"},
		{"http://example.com/a/%2e%2E/b", "http://example.com/b"},
		{"http://example.com/a//b/", "http://example.com/a//b/"},
		{"http://example.com/%7Euser/%41", "http://example.com/~user/A"},
		{"http://example.com/a%2fb", "http://example.com/a%2Fb"},
		{"http://example.com/a%2Fb%3f", "http://example.com/a%2Fb%3F"},
		{"http://example.com/my docs/", "http://example.com/my%20docs/"},
		{"http://example.com/café", "http://example.com/caf%C3%A9"},
		{"http://example.com/100%", "http://example.com/100%25"},
		{"http://example.com/%zz", "http://example.com/%25zz"},
		{"http://example.com/a<b>", "http://example.com/a%3Cb%3E"},
		{"http://example.com/a;p=1,2:@!$'()*+", "http://example.com/a;p=1,2:@!$'()*+"},
		{"http://example.com\\a\\b", "http://example.com/a/b"},
		{"  http://example.com/a\n\tb  ", "http://example.com/ab"},
		{"http://example.com/?", "http://example.com/"},
		{"http://example.com/?&&", "http://example.com/"},
		{"http://example.com/?b=2&a=1", "http://example.com/?a=1&b=2"},
		{"http://example.com/?b=2&a=1&b=1", "http://example.com/?a=1&b=2&b=1"},
		{"http://example.com/?q=a+b&x=%7e&y=%2f", "http://example.com/?q=a+b&x=~&y=%2F"},
		{"http://example.com/?a=[1]|{}", "http://example.com/?a=%5B1%5D%7C%7B%7D"},
		{"http://example.com/?a=/b?c", "http://example.com/?a=/b?c"},
		{"http://bücher.example/", "http://xn--bcher-kva.example/"},
		{"http://B%C3%BCcher.example/", "http://xn--bcher-kva.example/"},
		{"http://[2001:DB8:0:1:0:0:0:1]/", "http://[2001:db8:0:1::1]/"},
		{"http://[2001:db8:0:1::1]:8080", "http://[2001:db8:0:1::1]:8080/"},
		{"http://[::ffff:10.0.0.1]/", "http://[::ffff:a00:1]/"},
		{"http://[0:0:0:0:1:0:0:0]/", "http://[::1:0:0:0]/"},
		{"http://[1:0:0:2:0:0:0:3]/", "http://[1:0:0:2::3]/"},
		{"http://example.com:0/", "http://example.com:0/"},
		{"http:/example.com/a", "http://example.com/a"},
		{"http:\\\\example.com\\a", "http://example.com/a"},
		{"http:///path", "http://path/"},
		{"http://xn--/", "http://xn--/"},
		{"http://a.b.XN--pokxncvks/", "http://a.b.xn--pokxncvks/"},
		{"http://ex!$&'()*+,;=_~ample/", "http://ex!$&'()*+,;=_~ample/"},
		{"http://example.com/?q='x'", "http://example.com/?q=%27x%27"},
		{"http://example.com/it's", "http://example.com/it's"},
		{"http://10.0.0.1:80/", "http://10.0.0.1/"},
		{"http://my_host.intranet/", "http://my_host.intranet/"},
		{"ftp://files.example.com", "ftp://files.example.com/"},
		{"ftp://files.example.com:21/x", "ftp://files.example.com/x"},
		{"gopher://example.com:70/", "gopher://example.com:70/"},
	} {
		got, err := Normalize(tc.in)
		if err != nil {
			t.Errorf("Normalize(%q): %v", tc.in, err)
			continue
		}
		if got != tc.want {
			t.Errorf("Normalize(%q) = %q, want %q", tc.in, got, tc.want)
		}
		again, err := Normalize(got)
		if err != nil || again != got {
			t.Errorf("Normalize(%q) = %q, %v: not idempotent", got, again, err)
		}
	}
}

func TestNormalizeRejectsWhatCannotBeCrawled(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want error
	}{
		{"", ErrEmpty},
		{"   ", ErrEmpty},
		{"/relative/path", ErrRelative},
		{"www.ibm.com", ErrRelative},
		{"mailto:someone@example.com", ErrOpaque},
		{"javascript:void(0)", ErrOpaque},
		{"data:text/plain,hi", ErrOpaque},
		{"file:///etc/passwd", ErrOpaque},
		{"http://", ErrHost},
		{"http:", ErrHost},
		{"http://user@/path", ErrHost},
		{"http://exa mple.com/", ErrHost},
		{"http://exa%20mple.com/", ErrHost},
		{"http://a<b/", ErrHost},
		{"http://a%25b/", ErrHost},
		{"http://a:b:c/", ErrPort},
		{"http://a{b}/", ErrHost},
		{"http://a`b/", ErrHost},
		{"http://example.com:port/", ErrPort},
		{"http://example.com:99999/", ErrPort},
		{"http://[::1/", ErrHost},
		{"http://[fe80::1%25eth0]/", ErrHost},
		{"http://[10.0.0.1]/", ErrHost},
		{"http://xn--ls8h%00/", ErrHost},
	} {
		got, err := Normalize(tc.in)
		if !errors.Is(err, tc.want) {
			t.Errorf("Normalize(%q) = %q, %v; want error %v", tc.in, got, err, tc.want)
		}
	}
}

func TestNormalizeAlreadyNormalisedDoesNotAllocate(t *testing.T) {
	in := "http://www.example.com/docs/guide/index.html?id=12&page=3"
	allocs := testing.AllocsPerRun(100, func() {
		if s, err := Normalize(in); err != nil || s != in {
			t.Fatal(s, err)
		}
	})
	if allocs != 0 {
		t.Errorf("Normalize of a normalised URL allocated %v times", allocs)
	}
}

// The examples of RFC 3986 section 5.4, except the opaque "g:h" (not
// hierarchical, so an error here), with "//g" given its "/" and "http:g"
// read as the URL Standard and RFC 3986's backward-compatible parsers do.
func TestResolveFollowsRFC3986Examples(t *testing.T) {
	base := "http://a/b/c/d;p?q"
	for ref, want := range map[string]string{
		"g": "http://a/b/c/g", "./g": "http://a/b/c/g", "g/": "http://a/b/c/g/",
		"/g": "http://a/g", "//g": "http://g/", "?y": "http://a/b/c/d;p?y",
		"g?y": "http://a/b/c/g?y", "#s": "http://a/b/c/d;p?q", "g#s": "http://a/b/c/g",
		"g?y#s": "http://a/b/c/g?y", ";x": "http://a/b/c/;x", "g;x": "http://a/b/c/g;x",
		"g;x?y#s": "http://a/b/c/g;x?y", "": "http://a/b/c/d;p?q", ".": "http://a/b/c/",
		"./": "http://a/b/c/", "..": "http://a/b/", "../": "http://a/b/",
		"../g": "http://a/b/g", "../..": "http://a/", "../../": "http://a/",
		"../../g":    "http://a/g",
		"../../../g": "http://a/g", "../../../../g": "http://a/g", "/./g": "http://a/g",
		"/../g": "http://a/g", "g.": "http://a/b/c/g.", ".g": "http://a/b/c/.g",
		"g..": "http://a/b/c/g..", "..g": "http://a/b/c/..g", "./../g": "http://a/b/g",
		"./g/.": "http://a/b/c/g/", "g/./h": "http://a/b/c/g/h", "g/../h": "http://a/b/c/h",
		"g;x=1/./y": "http://a/b/c/g;x=1/y", "g;x=1/../y": "http://a/b/c/y",
		"g?y/./x": "http://a/b/c/g?y/./x", "g?y/../x": "http://a/b/c/g?y/../x",
		"g#s/./x": "http://a/b/c/g", "g#s/../x": "http://a/b/c/g",
		"HTTPS://Other.Example:443/x": "https://other.example/x", "http:g": "http://a/b/c/g",
	} {
		got, err := Resolve(base, ref)
		if err != nil {
			t.Errorf("Resolve(%q): %v", ref, err)
			continue
		}
		if got != want {
			t.Errorf("Resolve(%q) = %q, want %q", ref, got, want)
		}
	}
}

func TestResolveRelativeToPagesWithoutDirectory(t *testing.T) {
	for _, tc := range []struct{ base, ref, want string }{
		{"http://a", "g", "http://a/g"},
		{"http://a/page", "other", "http://a/other"},
		{"http://A:80/x/y", "../z?b=2&a=1", "http://a/z?b=2&a=1"},
		{"https://a/x/", "\\y\\z", "https://a/y/z"},
	} {
		if got, err := Resolve(tc.base, tc.ref); err != nil || got != tc.want {
			t.Errorf("Resolve(%q, %q) = %q, %v; want %q", tc.base, tc.ref, got, err, tc.want)
		}
	}
}

func TestResolveSkipsLinksThatAreNotPages(t *testing.T) {
	for _, ref := range []string{"mailto:x@a", "javascript:void(0)", "tel:+123", "data:,x", "file:///x"} {
		if got, err := Resolve("http://a/b/", ref); err == nil {
			t.Errorf("Resolve(%q) = %q, want an error", ref, got)
		}
	}
}

func TestQueryFilterEndsEndlessCalendars(t *testing.T) {
	n := New([]string{"id"})
	for in, want := range map[string]string{
		"http://site/calendar?year=2018&month=11&day=8": "http://site/calendar",
		"http://site/item?id=12345":                     "http://site/item?id=12345",
		"http://site/item?nr=7&ID=12345&sort=asc":       "http://site/item?ID=12345",
	} {
		if got, err := n.Normalize(in); err != nil || got != want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	next, _ := Resolve("http://site/calendar?year=2018&month=11&day=8", "?year=2018&month=11&day=9")
	if got, _ := n.Normalize(next); got != "http://site/calendar" {
		t.Errorf("the calendar's next day has the key %q, want the calendar itself", got)
	}
	more := New([]string{"id", "nr"})
	if got, _ := more.Normalize("http://site/item?nr=7&id=1&day=8"); got != "http://site/item?id=1&nr=7" {
		t.Errorf("extra honored parameter: got %q", got)
	}
	if got, _ := New(nil).Normalize("http://site/item?id=1"); got != "http://site/item" {
		t.Errorf("an empty honored list must drop every parameter, got %q", got)
	}
	if got, _ := New([]string{"*"}).Normalize("http://site/?z=1&a=2"); got != "http://site/?a=2&z=1" {
		t.Errorf(`"*" must keep every parameter, got %q`, got)
	}
}

func TestSortingManyParametersKeepsThemAll(t *testing.T) {
	in := "http://s/?t=1&s=1&r=1&q=1&p=1&o=1&n=1&m=1&l=1&k=1&j=1&i=1&h=1&g=1&f=1&e=1&d=1&c=1&b=1&a=1&a=0"
	want := "http://s/?a=1&a=0&b=1&c=1&d=1&e=1&f=1&g=1&h=1&i=1&j=1&k=1&l=1&m=1&n=1&o=1&p=1&q=1&r=1&s=1&t=1"
	if got, err := Normalize(in); err != nil || got != want {
		t.Errorf("got %q, %v", got, err)
	}
}

func TestSplitCutsNormalisedURLs(t *testing.T) {
	for in, want := range map[string]Parts{
		"http://a.example/x/y?q=1":     {Origin: "http://a.example", Scheme: "http", Host: "a.example", Path: "/x/y", Query: "q=1"},
		"https://a.example:8443/":      {Origin: "https://a.example:8443", Scheme: "https", Host: "a.example", Port: "8443", Path: "/"},
		"http://[2001:db8::1]:8080/p":  {Origin: "http://[2001:db8::1]:8080", Scheme: "http", Host: "2001:db8::1", Port: "8080", Path: "/p"},
		"http://[2001:db8::1]/?a=b:c/": {Origin: "http://[2001:db8::1]", Scheme: "http", Host: "2001:db8::1", Path: "/", Query: "a=b:c/"},
	} {
		got, ok := Split(in)
		if !ok || got != want {
			t.Errorf("Split(%q) = %+v, %v; want %+v", in, got, ok, want)
		}
	}
	if p, _ := Split("https://a.example/"); p.EffectivePort() != "443" {
		t.Errorf("effective port of https: %q", p.EffectivePort())
	}
	if _, ok := Split("not a url"); ok {
		t.Error("Split accepted a string without scheme://host")
	}
}

func TestEscapeMakesHandWrittenPatternsComparable(t *testing.T) {
	for in, want := range map[string]string{
		"/my docs/café":            "/my%20docs/caf%C3%A9",
		"search?date=":             "search?date=",
		"/%7euser/%2f":             "/~user/%2F",
		"http://[2001:db8::1]/a b": "http://[2001:db8::1]/a%20b",
		"filter[]=":                "filter%5B%5D=",
	} {
		if got := Escape(in); got != want {
			t.Errorf("Escape(%q) = %q, want %q", in, got, want)
		}
	}
}

func FuzzNormalize(f *testing.F) {
	for _, s := range []string{
		"http://example.com/a/../b?z=1&a=2#f", "HTTP://[::1]:80/%7e", "http://bücher.de/ä?x",
		"https://a/b/./c/%2e%2e/d", "http://a:0/", "http://a/?&&=&", "http://a\\b\\..\\c",
		"http://0x7f.1:8080/", "http://2130706433./a", "http://0177.0.0.1/", "http://%31%32%37.1/",
	} {
		f.Add(s)
	}
	n := New([]string{"id", "page"})
	f.Fuzz(func(t *testing.T, raw string) {
		found, ferr := Found(raw)
		key, kerr := Normalize(raw)
		if (ferr == nil) != (kerr == nil) {
			t.Fatalf("%q: as found %q, %v; key %q, %v", raw, found, ferr, key, kerr)
		}
		if ferr == nil {
			// The key is a step after the URL as found, never another reading.
			if again, err := Found(found); err != nil || again != found {
				t.Fatalf("not idempotent as found: %q -> %q -> %q, %v", raw, found, again, err)
			}
			if k, err := Normalize(found); err != nil || k != key {
				t.Fatalf("%q: key %q, but its URL as found %q has the key %q, %v", raw, key, found, k, err)
			}
			if k, err := n.Normalize(n.Filter(found)); err != nil || k != mustNormalize(t, n, raw) {
				t.Fatalf("%q: the filtered URL as found %q has the key %q, %v", raw, n.Filter(found), k, err)
			}
		}
		for _, norm := range []*Normalizer{keepAll, n} {
			got, err := norm.Normalize(raw)
			if err != nil {
				return
			}
			again, err := norm.Normalize(got)
			if err != nil || again != got {
				t.Fatalf("not idempotent: %q -> %q -> %q, %v", raw, got, again, err)
			}
			for i := 0; i < len(got); i++ {
				if got[i] <= ' ' || got[i] >= 0x7f || got[i] == '#' {
					t.Fatalf("%q -> %q: byte %q left raw", raw, got, got[i])
				}
			}
			p, ok := Split(got)
			if !ok || p.Path == "" || p.Path[0] != '/' {
				t.Fatalf("%q -> %q: Split gave %+v, %v", raw, got, p, ok)
			}
			u, err := url.Parse(got)
			if err != nil || u.Scheme != p.Scheme || u.RawQuery != p.Query {
				t.Fatalf("%q -> %q: net/url reads %+v, %v", raw, got, u, err)
			}
		}
	})
}

func mustNormalize(t *testing.T, n *Normalizer, raw string) string {
	t.Helper()
	u, err := n.Normalize(raw)
	if err != nil {
		t.Fatalf("%q: %v", raw, err)
	}
	return u
}

// The filter alone, on a URL as found, keeps the order the site wrote:
// that is the URL requested; its key is the sorted one.
func TestFilterDropsWhatTheQueryFilterDropsAndKeepsTheOrder(t *testing.T) {
	n := New([]string{"id", "page"})
	for in, want := range map[string]string{
		"http://site/list?sort=asc&page=2&id=7": "http://site/list?page=2&id=7",
		"http://site/list?page=2&id=7":          "http://site/list?page=2&id=7",
		"http://site/calendar?year=2018":        "http://site/calendar",
		"http://site/a?&page=1&&":               "http://site/a?page=1",
		"http://site/plain":                     "http://site/plain",
	} {
		if got := n.Filter(in); got != want {
			t.Errorf("Filter(%q) = %q, want %q", in, got, want)
		}
	}
	if got := New([]string{"*"}).Filter("http://site/?b=2&a=1&&"); got != "http://site/?b=2&a=1&&" {
		t.Errorf(`"*" must keep the URL as found, got %q`, got)
	}
}

func BenchmarkNormalize(b *testing.B) {
	for _, bc := range []struct{ name, in string }{
		{"normalised", "http://www.example.com/docs/guide/index.html?id=12&page=3"},
		{"typical", "HTTP://WWW.Example.com:80/docs/./guide/../guide/index.html?page=3&id=12#top"},
		{"escapes", "http://www.example.com/my docs/caf%c3%a9/%7euser/a%2fb?q=a b&x=%7e"},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Normalize(bc.in); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("resolve", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Resolve("http://www.example.com/docs/guide/index.html", "../api/reference.html?b=2&a=1#x"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("calendar-filter", func(b *testing.B) {
		n := New([]string{"id"})
		b.ReportAllocs()
		for b.Loop() {
			if _, err := n.Normalize("http://site/calendar?year=2018&month=11&day=8&id=3"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("link", func(b *testing.B) {
		lb, _ := ParseBase("http://www.example.com/docs/guide/index.html")
		ref := []byte("../api/reference.html?b=2&a=1#x")
		var buf []byte
		b.ReportAllocs()
		for b.Loop() {
			buf, _ = lb.AppendResolved(buf[:0], ref)
		}
	})
}

func TestNumericHostsAreTheirDottedIPv4AddressAsInTheWHATWGURLStandard(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"http://2130706433/", "http://127.0.0.1/"},
		{"http://0x7f.1/", "http://127.0.0.1/"},
		{"http://0X7F.0X0.0X0.0X1/a", "http://127.0.0.1/a"},
		{"http://0177.0.0.1/", "http://127.0.0.1/"},
		{"http://0177.1:8080/", "http://127.0.0.1:8080/"},
		{"http://127.1/", "http://127.0.0.1/"},
		{"http://10.1/", "http://10.0.0.1/"},
		{"http://192.168.257/", "http://192.168.1.1/"},
		{"http://127.0.0.1./", "http://127.0.0.1/"},
		{"http://0x/", "http://0.0.0.0/"},
		{"http://00/", "http://0.0.0.0/"},
		{"http://4294967295/", "http://255.255.255.255/"},
		{"http://0xffffffff/", "http://255.255.255.255/"},
		{"http://%31%32%37.1/", "http://127.0.0.1/"},
		{"http://１２７.０.０.１/", "http://127.0.0.1/"},
		{"http://10.0.0.1/", "http://10.0.0.1/"},
		{"http://a.1x/", "http://a.1x/"},
		{"http://1.example/", "http://1.example/"},
		{"http://0xg/", "http://0xg/"},
	} {
		got, err := Normalize(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("Normalize(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
		if got, err := Resolve("http://page.example/dir/", tc.in); err != nil || got != tc.want {
			t.Errorf("Resolve(%q) = %q, %v; want %q", tc.in, got, err, tc.want)
		}
	}
}

func TestHostsThatEndInANumberButAreNoAddressAreInvalid(t *testing.T) {
	for _, in := range []string{
		"http://4294967296/",
		"http://1.2.3.4.5/",
		"http://256.1.1.1/",
		"http://1.2.65536/",
		"http://09.1.1.1/",
		"http://0x1g.1/",
		"http://example.123/",
		"http://1..2/",
		"http://99999999999999999999999/",
	} {
		if got, err := Normalize(in); !errors.Is(err, ErrHost) {
			t.Errorf("Normalize(%q) = %q, %v; want ErrHost", in, got, err)
		}
	}
}

func TestOriginIsSchemeHostAndPort(t *testing.T) {
	for in, want := range map[string]string{
		"http://a.test/x":          "http://a.test",
		"https://a.test:8443?q":    "https://a.test:8443",
		"http://user:pw@a.test/x":  "http://a.test",
		"http://a.test":            "http://a.test",
		"mailto:someone@a.test":    "",
		"/relative/path":           "",
		"http:///no-host":          "",
		"http://[::1]:8080/x#frag": "http://[::1]:8080",
	} {
		if got := Origin(in); got != want {
			t.Errorf("Origin(%q) = %q, want %q", in, got, want)
		}
	}
}
