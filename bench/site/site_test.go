package main

import (
	"bytes"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
)

// hrefs returns the targets of the page's <a href="..."> elements.
func hrefs(page []byte) []string {
	var out []string
	open := []byte(`<a href="`)
	for {
		k := bytes.Index(page, open)
		if k < 0 {
			return out
		}
		page = page[k+len(open):]
		end := bytes.IndexByte(page, '"')
		out = append(out, html.UnescapeString(string(page[:end])))
	}
}

func TestPagesAreDeterministicForASeedAndDifferAcrossSeeds(t *testing.T) {
	a, b, other := NewSite(10000, 7), NewSite(10000, 7), NewSite(10000, 8)
	for _, i := range []int{0, 1, 13, 17, 4242, 9999} {
		pa, pb := a.AppendPage(nil, i, "h"), b.AppendPage(nil, i, "h")
		if !bytes.Equal(pa, pb) {
			t.Errorf("page %d differs between two sites with the same seed", i)
		}
		if a.ETag(i) != b.ETag(i) || !a.LastModified(i).Equal(b.LastModified(i)) {
			t.Errorf("page %d: validators differ between two sites with the same seed", i)
		}
		if i > len(sections) && bytes.Equal(pa, other.AppendPage(nil, i, "h")) {
			t.Errorf("page %d is the same under another seed", i)
		}
	}
}

func TestPagesAreAbout30KBWithAbout80LinksAndHeadMetadata(t *testing.T) {
	s := NewSite(10000, 1)
	var query, fragment, offsite int
	for _, i := range []int{0, 3, 12, 13, 17, 250, 1000, 5003, 9999} {
		p := s.AppendPage(nil, i, "127.0.0.1:8080")
		if n := len(p); n < 26<<10 || n > 36<<10 {
			t.Errorf("page %d (%s) is %d bytes, want about 30 KB", i, s.URL(i), n)
		}
		links := hrefs(p)
		// Leaf pages lack the 8 child links that inner pages have.
		if n := len(links); n < 70 || n > 90 {
			t.Errorf("page %d has %d links, want about 80", i, n)
		}
		for _, l := range links {
			switch {
			case strings.HasPrefix(l, "https://"):
				offsite++
			case strings.Contains(l, "#"):
				fragment++
			case strings.Contains(l, "?"):
				query++
			}
		}
		for _, want := range []string{"<title>", `name="description"`, `name="keywords"`, `property="og:title"`,
			`property="og:url"`, `name="DC.title"`, `name="DC.date"`, "<header", "<nav>", "<footer>", "<h1>", "<h2"} {
			if !bytes.Contains(p, []byte(want)) {
				t.Errorf("page %d lacks %s", i, want)
			}
		}
	}
	if query == 0 || fragment == 0 || offsite == 0 {
		t.Errorf("links with a query: %d, with a fragment: %d, off-site: %d; want some of each", query, fragment, offsite)
	}
}

func TestEveryPageURLLooksUpToItselfAndOtherSpellingsAreNotPages(t *testing.T) {
	s := NewSite(3000, 1)
	for i := range s.N {
		u, err := url.Parse(s.URL(i))
		if err != nil {
			t.Fatal(err)
		}
		if got, ok := s.Lookup(u.EscapedPath(), u.RawQuery); !ok || got != i {
			t.Fatalf("Lookup(%s) = %d, %v; want %d", s.URL(i), got, ok, i)
		}
	}
	for _, bad := range []string{"/catalog/item?id=013", "/catalog/item?id=14", "/catalog/item?id=3003",
		s.URL(17) + "&x=1", strings.Replace(s.URL(17), "page=17&sort=asc", "sort=asc&page=17", 1),
		"/news", "/nosuch/", "/index.html", strings.Replace(s.URL(20), "-20.html", "-21.html", 1)} {
		u, _ := url.Parse(bad)
		if i, ok := s.Lookup(u.EscapedPath(), u.RawQuery); ok {
			t.Errorf("Lookup(%s) = page %d; want no page", bad, i)
		}
	}
}

func TestEveryPageIsReachableFromTheRootAndEveryOnSiteLinkIsAPage(t *testing.T) {
	s := NewSite(1500, 3)
	base, _ := url.Parse("http://127.0.0.1:8080/")
	seen := map[int]bool{0: true}
	queue := []int{0}
	var buf []byte
	for len(queue) > 0 {
		i := queue[0]
		queue = queue[1:]
		page, _ := url.Parse(s.URL(i))
		buf = s.AppendPage(buf[:0], i, base.Host)
		for _, l := range hrefs(buf) {
			u, err := base.ResolveReference(page).Parse(l)
			if err != nil {
				t.Fatalf("page %d: link %q: %v", i, l, err)
			}
			if u.Host != base.Host || (u.Scheme != "http" && u.Scheme != "https") {
				continue
			}
			j, ok := s.Lookup(u.EscapedPath(), u.RawQuery)
			if !ok {
				t.Fatalf("page %d links to %q, which is not a page", i, l)
			}
			if !seen[j] {
				seen[j] = true
				queue = append(queue, j)
			}
		}
	}
	if len(seen) != s.N {
		t.Errorf("reached %d pages from the root, want all %d", len(seen), s.N)
	}
}

func TestServerAnswersConditionalRequestsWith304AndCountsThem(t *testing.T) {
	h := NewHandler(NewSite(100, 1))
	srv := httptest.NewServer(h)
	defer srv.Close()
	get := func(path string, hdr ...string) (*http.Response, []byte) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodGet, srv.URL+path, nil)
		for k := 0; k+1 < len(hdr); k += 2 {
			req.Header.Set(hdr[k], hdr[k+1])
		}
		res, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer res.Body.Close()
		body, _ := io.ReadAll(res.Body)
		return res, body
	}
	path := h.Site.URL(17)
	res, body := get(path)
	etag, mod := res.Header.Get("ETag"), res.Header.Get("Last-Modified")
	if res.StatusCode != 200 || etag == "" || mod == "" || len(body) < 20<<10 {
		t.Fatalf("GET %s: %d, ETag %q, Last-Modified %q, %d bytes", path, res.StatusCode, etag, mod, len(body))
	}
	if res, body = get(path, "If-None-Match", etag); res.StatusCode != http.StatusNotModified || len(body) != 0 {
		t.Errorf("If-None-Match with the page's ETag: %d with %d bytes, want 304 and no body", res.StatusCode, len(body))
	}
	if res, _ = get(path, "If-None-Match", `"other", W/`+etag); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-None-Match listing the weak form of the ETag: %d, want 304", res.StatusCode)
	}
	if res, _ = get(path, "If-None-Match", `"stale"`, "If-Modified-Since", mod); res.StatusCode != 200 {
		t.Errorf("If-None-Match with another ETag (If-Modified-Since ignored beside it): %d, want 200", res.StatusCode)
	}
	if res, _ = get(path, "If-Modified-Since", mod); res.StatusCode != http.StatusNotModified {
		t.Errorf("If-Modified-Since the page's date: %d, want 304", res.StatusCode)
	}
	if res, body = get("/robots.txt"); res.StatusCode != 200 || !strings.Contains(string(body), "Allow: /") {
		t.Errorf("robots.txt: %d %q, want 200 allowing everything", res.StatusCode, body)
	}
	if res, _ = get("/nosuch.html"); res.StatusCode != http.StatusNotFound {
		t.Errorf("unknown path: %d, want 404", res.StatusCode)
	}
	st := &h.Stats
	if st.OK.Load() != 2 || st.NotModified.Load() != 3 || st.NotFound.Load() != 1 || st.Robots.Load() != 1 {
		t.Errorf("stats ok=%d not_modified=%d not_found=%d robots=%d, want 2, 3, 1, 1",
			st.OK.Load(), st.NotModified.Load(), st.NotFound.Load(), st.Robots.Load())
	}
}

func TestValidatorsListEveryPageWithValidatorsTheServerAnswers304To(t *testing.T) {
	h := NewHandler(NewSite(50, 1))
	srv := httptest.NewServer(h)
	defer srv.Close()
	res, err := srv.Client().Get(srv.URL + ValidatorsPath)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	lines := strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n")
	if len(lines) != h.Site.N {
		t.Fatalf("%d lines, want one per page (%d)", len(lines), h.Site.N)
	}
	for i, line := range lines {
		f := strings.Split(line, "\t")
		if len(f) != 3 || f[0] != h.Site.URL(i) {
			t.Fatalf("line %d: %q, want page %d's URL, ETag and date", i, line, i)
		}
		for _, hdr := range [][2]string{{"If-None-Match", f[1]}, {"If-Modified-Since", f[2]}} {
			req, _ := http.NewRequest(http.MethodGet, srv.URL+f[0], nil)
			req.Header.Set(hdr[0], hdr[1])
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Fatal(err)
			}
			res.Body.Close()
			if res.StatusCode != http.StatusNotModified {
				t.Fatalf("%s with %s %s: %d, want 304", f[0], hdr[0], hdr[1], res.StatusCode)
			}
		}
	}
	if n := h.Stats.OK.Load() + h.Stats.Other.Load() + h.Stats.NotFound.Load(); n != 0 {
		t.Errorf("the list counted as %d answers, want none (the stats are the crawlers')", n)
	}
}

func BenchmarkAppendPage(b *testing.B) {
	s := NewSite(10000, 1)
	var buf []byte
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		buf = s.AppendPage(buf[:0], i%s.N, "127.0.0.1:8080")
	}
	b.SetBytes(int64(len(buf)))
}
