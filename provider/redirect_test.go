package provider_test

import (
	"fmt"
	"net/http"
	"slices"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

func TestRedirectChainIndexesOneDocumentAtTheFinalURL(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.redirect("/a", "/b")
	site.handle("/b", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "/c.html", http.StatusMovedPermanently)
	})
	site.html("/c.html", "c", "")
	cfg, out := testConfig(t, "", "", site.URL+"/a")

	c, report := crawlKeep(t, cfg)

	a := wantState(t, c, site.URL+"/a", frontier.Fetched, "")
	b := wantState(t, c, site.URL+"/b", frontier.Fetched, "")
	if a.Status != http.StatusFound || a.Target != site.URL+"/b" || a.Indexed {
		t.Errorf("/a: status %d, target %q, indexed %v", a.Status, a.Target, a.Indexed)
	}
	if b.Status != http.StatusMovedPermanently || b.Target != site.URL+"/c.html" || b.Indexed {
		t.Errorf("/b: status %d, target %q, indexed %v", b.Status, b.Target, b.Indexed)
	}
	if r := wantState(t, c, site.URL+"/c.html", frontier.Fetched, ""); !r.Indexed || r.Target != "" {
		t.Errorf("/c.html: indexed %v, target %q", r.Indexed, r.Target)
	}
	if got := indexedURLs(t, out); !slices.Equal(got, []string{site.URL + "/c.html"}) {
		t.Errorf("indexed %v, want the final URL only", got)
	}
	if got := report.Total.Reasons["redirect"]; got != 2 {
		t.Errorf("report counts %d redirects, want 2", got)
	}
}

func TestRedirectLoopEndsWithoutADocument(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.redirect("/a", "/b")
	site.redirect("/b", "/a")
	site.redirect("/self", "/self")
	site.html("/", "home", links("/a", "/self"))
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	if r := record(t, c, site.URL+"/a"); r.Target != site.URL+"/b" || r.Indexed {
		t.Errorf("/a: target %q, indexed %v", r.Target, r.Indexed)
	}
	if r := record(t, c, site.URL+"/b"); r.Target != site.URL+"/a" || r.Indexed {
		t.Errorf("/b: target %q, indexed %v", r.Target, r.Indexed)
	}
	wantState(t, c, site.URL+"/self", frontier.Error, "redirect_loop")
	for _, p := range []string{"/a", "/b", "/self"} {
		if n := site.hit(p); n != 1 {
			t.Errorf("%s requested %d times, want 1", p, n)
		}
	}
	if got := indexedURLs(t, out); !slices.Equal(got, []string{site.URL + "/"}) {
		t.Errorf("indexed %v, want the home page only", got)
	}
}

func TestRedirectChainLongerThanMaxRedirectsStopsWithTooManyRedirects(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	for i := range 10 {
		site.redirect(fmt.Sprintf("/r%d", i), fmt.Sprintf("/r%d", i+1))
	}
	site.html("/r10", "end", "")
	cfg, out := testConfig(t, "fetch: {max_redirects: 3}", "", site.URL+"/r0")

	c, report := crawlKeep(t, cfg)

	// r0→r1→r2→r3 are the three redirects allowed; r3's own is one too many.
	for i := range 3 {
		if r := record(t, c, fmt.Sprintf("%s/r%d", site.URL, i)); r.State != frontier.Fetched || r.Target == "" {
			t.Errorf("/r%d: %s, target %q", i, r.State, r.Target)
		}
	}
	r := wantState(t, c, site.URL+"/r3", frontier.Error, "too_many_redirects")
	if r.Status != http.StatusFound {
		t.Errorf("/r3 status %d", r.Status)
	}
	unknown(t, c, site.URL+"/r4")
	if n := site.hit("/r4"); n != 0 {
		t.Errorf("/r4 requested %d times", n)
	}
	if got := indexedURLs(t, out); len(got) != 0 {
		t.Errorf("indexed %v", got)
	}
	if report.Total.Reasons["too_many_redirects"] != 1 {
		t.Errorf("report reasons %v", report.Total.Reasons)
	}
}

func TestRedirectToAURLOutsideTheCrawlSpaceIsNotFetched(t *testing.T) {
	t.Parallel()
	site, other := newSite(t), newSite(t)
	site.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /secret\n")
	site.html("/", "home", links("/to-excluded", "/to-robots", "/to-offsite"))
	site.redirect("/to-excluded", "/private/page.html")
	site.redirect("/to-robots", "/secret.html")
	site.redirect("/to-offsite", other.URL+"/page.html")
	site.html("/private/page.html", "private", "")
	site.html("/secret.html", "secret", "")
	other.html("/page.html", "other", "")
	// Two of the pages are alike; this is about canonical links alone.
	cfg, out := testConfig(t, "", "exclude: [/private/]\nkeep_duplicates: true", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	for path, want := range map[string]string{
		"/to-excluded": site.URL + "/private/page.html",
		"/to-robots":   site.URL + "/secret.html",
		"/to-offsite":  other.URL + "/page.html",
	} {
		if r := wantState(t, c, site.URL+path, frontier.Fetched, ""); r.Target != want {
			t.Errorf("%s: target %q, want %q", path, r.Target, want)
		}
	}
	wantState(t, c, site.URL+"/private/page.html", frontier.Excluded, "excluded")
	wantState(t, c, site.URL+"/secret.html", frontier.Excluded, "robots")
	wantState(t, c, other.URL+"/page.html", frontier.Excluded, "offsite")
	for _, p := range []string{"/private/page.html", "/secret.html"} {
		if n := site.hit(p); n != 0 {
			t.Errorf("%s requested %d times", p, n)
		}
	}
	if got := other.requested(); len(got) != 0 {
		t.Errorf("the other host got %v", got)
	}
	if got := indexedURLs(t, out); !slices.Equal(got, []string{site.URL + "/"}) {
		t.Errorf("indexed %v", got)
	}
	for _, reason := range []string{"excluded", "robots", "offsite"} {
		if report.Total.Reasons[reason] != 1 {
			t.Errorf("report counts %d %s, want 1", report.Total.Reasons[reason], reason)
		}
	}
}

func TestCredentialsAndCustomHeadersAreNotSentToAnotherHostAfterARedirect(t *testing.T) {
	t.Parallel()
	site, other := newSite(t), newSite(t)
	site.html("/", "home", links("/away"))
	site.redirect("/away", other.URL+"/landing.html")
	site.redirect("/sitemap.xml", other.URL+"/sitemap.xml")
	other.html("/landing.html", "landing", "")
	other.text("/sitemap.xml", "application/xml", fmt.Sprintf(
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/listed.html</loc></url></urlset>`, other.URL))
	other.html("/listed.html", "listed", "")
	cfg, out := testConfig(t, "", fmt.Sprintf(`
stay_on_start_hosts: false
sitemaps: [%q]
auth: {username: alice, password: s3cret}
headers: {X-Token: t0ken}`, site.URL+"/sitemap.xml"), site.URL+"/")

	crawlKeep(t, cfg)

	h := site.headers("/")
	if len(h) != 1 || h[0].Get("Authorization") == "" || h[0].Get("X-Token") != "t0ken" {
		t.Fatalf("the source's own host did not get its credentials: %v", h)
	}
	for _, uri := range []string{"/landing.html", "/sitemap.xml", "/listed.html"} {
		hs := other.headers(uri)
		if len(hs) != 1 {
			t.Errorf("%s requested %d times on the other host, want 1", uri, len(hs))
		}
		for _, h := range hs {
			if h.Get("Authorization") != "" || h.Get("X-Token") != "" {
				t.Errorf("the other host got credentials on %s: Authorization %q, X-Token %q", uri, h.Get("Authorization"), h.Get("X-Token"))
			}
		}
	}
	want := []string{site.URL + "/", other.URL + "/landing.html", other.URL + "/listed.html"}
	slices.Sort(want)
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

func TestCanonicalLinkToAnotherPageOfTheSiteLeavesOneDocument(t *testing.T) {
	t.Parallel()
	site, other := newSite(t), newSite(t)
	site.html("/", "home", links("/print.html", "/offsite-canonical.html", "/excluded-canonical.html"))
	site.handle("/print.html", htmlHead(`<link rel="canonical" href="/article.html">`, "print"))
	site.handle("/article.html", htmlHead(`<link rel="canonical" href="/article.html">`, "article"))
	site.handle("/offsite-canonical.html", htmlHead(fmt.Sprintf(`<link rel="canonical" href="%s/elsewhere.html">`, other.URL), ""))
	site.handle("/excluded-canonical.html", htmlHead(`<link rel="canonical" href="/private/x.html">`, ""))
	// Two of the pages are alike; this is about canonical links alone.
	cfg, out := testConfig(t, "", "exclude: [/private/]\nkeep_duplicates: true", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	r := wantState(t, c, site.URL+"/print.html", frontier.Fetched, "")
	if r.Target != site.URL+"/article.html" || r.Indexed {
		t.Errorf("/print.html: target %q, indexed %v", r.Target, r.Indexed)
	}
	if r := wantState(t, c, site.URL+"/article.html", frontier.Fetched, ""); !r.Indexed {
		t.Error("/article.html is not indexed")
	}
	// A canonical URL on another host or outside the crawl space is ignored.
	want := sortedURLs(site.URL, "/", "/article.html", "/offsite-canonical.html", "/excluded-canonical.html")
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if n := site.hit("/article.html"); n != 1 {
		t.Errorf("/article.html requested %d times", n)
	}
	if n := site.hit("/private/x.html"); n != 0 {
		t.Errorf("the excluded canonical URL was requested %d times", n)
	}
	if len(other.requested()) != 0 {
		t.Errorf("the other host got %v", other.requested())
	}
	if report.Total.Reasons["canonical_alias"] != 1 {
		t.Errorf("report reasons %v", report.Total.Reasons)
	}
}

func TestRedirectToAMalformedURLIsAPermanentError(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/bad-location", "/no-location"))
	site.handle("/bad-location", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Location", "http://[::1/broken")
		w.WriteHeader(http.StatusMovedPermanently)
	})
	site.status("/no-location", http.StatusFound)
	cfg, _ := testConfig(t, "", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	for _, p := range []string{"/bad-location", "/no-location"} {
		if r := wantState(t, c, site.URL+p, frontier.Error, "redirect_malformed"); r.Target != "" {
			t.Errorf("%s: target %q", p, r.Target)
		}
	}
	if report.Total.Reasons["redirect_malformed"] != 2 || report.Total.Errors != 2 {
		t.Errorf("report: %d errors, reasons %v", report.Total.Errors, report.Total.Reasons)
	}
}
