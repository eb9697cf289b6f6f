package provider_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

// rawSite is a loopback site that logs each request target exactly as it
// came on the request line, so a test can compare it with what a browser
// would request: the links of its pages, resolved as the URL Standard
// says.
type rawSite struct {
	*httptest.Server
	mu     sync.Mutex
	log    []string
	routes map[string]http.HandlerFunc // by the raw path, query aside
}

func newRawSite(t *testing.T) *rawSite {
	t.Helper()
	s := &rawSite{routes: map[string]http.HandlerFunc{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.log = append(s.log, r.RequestURI)
		path, _, _ := strings.Cut(r.RequestURI, "?")
		h := s.routes[path]
		s.mu.Unlock()
		if h == nil {
			http.NotFound(w, r)
			return
		}
		h(w, r)
	}))
	t.Cleanup(s.Close)
	return s
}

// page serves path (any query) as an HTML page, each URL's its own, so
// no two are duplicates fetched again to settle their group.
func (s *rawSite) page(path, body string) {
	s.routes[path] = func(w http.ResponseWriter, r *http.Request) {
		htmlPage(r.RequestURI, body)(w, r)
	}
}

func (s *rawSite) redirect(path, location string) {
	s.routes[path] = func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Location"] = []string{location}
		w.WriteHeader(http.StatusFound)
	}
}

// requests is every request target received, sorted.
func (s *rawSite) requests() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := slices.Clone(s.log)
	slices.Sort(out)
	return out
}

// A page whose links and redirects a browser resolves by the URL Standard
// is crawled the same way: each request the site receives is the one a
// browser would send (the request log is compared), but for the one place
// where crawlspace spells a URL its own way, a "%" that starts no escape,
// sent as "%25". robots.txt judges each URL as the site wrote it.
func TestLinksAndRedirectsAreRequestedAsABrowserRequestsThem(t *testing.T) {
	t.Parallel()
	site := newRawSite(t)
	host := strings.TrimPrefix(site.URL, "http://")
	site.routes["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /list?sort=\n")
	}
	site.page("/", `<a href="images\photo.html">a backslash</a>
<a href="/50%off.html">a stray percent</a>
<a href="/list?sort=asc&amp;page=2">robots.txt disallows /list?sort=</a>
<a href="/list?page=3&amp;sort=asc">allowed, and requested in this order</a>
<a href="http:relative.html">a scheme and a relative path</a>
<a href="  /spaced
.html ">spaces around, a newline inside</a>
<a href="/old-a">`+`</a><a href="/old-b"></a><a href="/old-c"></a><a href="/old-d"></a><a href="/old-e"></a>`)
	for _, p := range []string{"/images/photo.html", "/50%25off.html", "/list", "/relative.html", "/spaced.html",
		"/moved-a.html", "/moved-b.html", "/moved-c.html", "/moved-d.html", "/moved-e.html"} {
		site.page(p, "")
	}
	site.redirect("/old-a", "http:moved-a.html")
	site.redirect("/old-b", `\moved-b.html`)
	site.redirect("/old-c", "/moved\t-c.html")
	site.redirect("/old-d", "/moved-d.html?b=2&a=1")
	site.redirect("/old-e", `\\`+host+`\moved-e.html`)
	cfg, _ := testConfig(t, "", `honored_query_params: ["*"]`, site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	// What a browser requests for each link and Location above.
	browser := []string{
		"/", "/robots.txt",
		"/images/photo.html",
		"/50%off.html",
		"/list?page=3&sort=asc",
		"/relative.html",
		"/spaced.html",
		"/old-a", "/moved-a.html",
		"/old-b", "/moved-b.html",
		"/old-c", "/moved-c.html",
		"/old-d", "/moved-d.html?b=2&a=1",
		"/old-e", "/moved-e.html",
	}
	want := slices.Clone(browser)
	want[slices.Index(want, "/50%off.html")] = "/50%25off.html" // the one spelling of crawlspace's own
	slices.Sort(want)
	if got := site.requests(); !slices.Equal(got, want) {
		t.Errorf("the site received\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	wantState(t, c, site.URL+"/list?page=2&sort=asc", frontier.Excluded, "robots")
	wantState(t, c, site.URL+"/list?page=3&sort=asc", frontier.Fetched, "")
	wantState(t, c, site.URL+"/moved-d.html?a=1&b=2", frontier.Fetched, "")
}

// With a query filter that drops a parameter, the URL requested is the
// one the site wrote less that parameter, and robots.txt must allow both:
// the URL as found and the URL requested.
func TestRobotsTxtMustAllowTheURLAsFoundAndTheURLTheFilterRequests(t *testing.T) {
	t.Parallel()
	site := newRawSite(t)
	site.routes["/robots.txt"] = func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		fmt.Fprint(w, "User-agent: *\nDisallow: /list?sort=\nDisallow: /item?id=9$\n")
	}
	site.page("/", links("/list?sort=asc&id=1", "/list?id=2&sort=asc", "/item?id=9&utm=x", "/item?utm=x&id=8"))
	site.page("/list", "")
	site.page("/item", "")
	cfg, _ := testConfig(t, "", `honored_query_params: [id]`, site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	want := []string{"/", "/item?id=8", "/list?id=2", "/robots.txt"}
	if got := site.requests(); !slices.Equal(got, want) {
		t.Errorf("the site received %q, want %q", got, want)
	}
	wantState(t, c, site.URL+"/list?id=1", frontier.Excluded, "robots")
	wantState(t, c, site.URL+"/item?id=9", frontier.Excluded, "robots")
}
