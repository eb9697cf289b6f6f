package provider_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/render"
)

// refLinks are links as a CMS writes them, each with the request a browser
// makes for it: parameter names that begin with a legacy named reference
// (&sect, &reg, &para, &not, &copy, &times) stay as written in an
// attribute, where the HTML Standard's tokenizer leaves a reference without
// ';' alone before '=' or an alphanumeric; the others are decoded.
var refLinks = []struct{ href, request string }{
	{"/search?q=a&section=news", "/search?q=a&section=news"},
	{"/list?a=1&region=eu", "/list?a=1&region=eu"},
	{"/page?a=1&param=2", "/page?a=1&param=2"},
	{"/mail?a=1&notify=yes", "/mail?a=1&notify=yes"},
	{"/copy?a=1&copy=2", "/copy?a=1&copy=2"},
	{"/cal?a=1&times=3", "/cal?a=1&times=3"},
	{"/amp?a=1&amp;b=2", "/amp?a=1&b=2"},
	{"/legal?s=&sect;3", "/legal?s=%C2%A73"},
	{"/mark?x=&copy", "/mark?x=%C2%A9"},
	{"/euro?c=&#x80;", "/euro?c=%E2%82%AC"},
	{"/half?x=&frac12", "/half?x=%C2%BD"},
}

// refPage is the page holding refLinks. Its script, which only a browser
// runs, writes the URLs the browser made of its links into the page.
func refPage() string {
	var b strings.Builder
	for _, l := range refLinks {
		fmt.Fprintf(&b, "<a href=\"%s\">%s</a>\n", l.href, l.href)
	}
	b.WriteString(`<script>
const out = document.createElement('pre');
out.id = 'hrefs';
out.textContent = JSON.stringify(Array.from(document.links, a => a.href));
document.body.append(out);
</script>`)
	return b.String()
}

func refSite(t *testing.T) *testSite {
	site := newSite(t)
	site.html("/", "links", refPage())
	for _, l := range refLinks {
		u, err := url.Parse(l.request)
		if err != nil {
			t.Fatal(err)
		}
		site.html(u.Path, u.Path, "")
	}
	return site
}

func refRequests() []string {
	want := []string{"/", "/robots.txt"}
	for _, l := range refLinks {
		want = append(want, l.request)
	}
	return want
}

// A page with such links crawled on loopback: the site's request log holds
// what a browser requests. Before, "&section=" was read as "§ion=" and
// "/search?q=a%C2%A7ion=news" requested instead.
func TestLinksWithCharacterReferencesAreRequestedAsABrowserRequestsThem(t *testing.T) {
	t.Parallel()
	site := refSite(t)
	cfg, _ := testConfig(t, "", `honored_query_params: ["*"]`, site.URL+"/")

	crawlKeep(t, cfg)

	wantRequested(t, site, refRequests()...)
}

// Chromium itself is the reference: the requests for the page's links, as
// the browser resolves them, are the crawler's. And a rendered crawl,
// which reads the DOM Chromium serializes, requests the same.
func TestLinksWithCharacterReferencesAreWhatChromiumMakesOfThem(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	site := refSite(t)
	b := render.New(render.Options{Path: browser, Tabs: 1})
	t.Cleanup(func() { _ = b.Close() })
	res, err := http.Get(site.URL + "/")
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(res.Body)
	res.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := b.Render(context.Background(), render.Request{URL: site.URL + "/", Header: res.Header, Body: body,
		Wait: render.WaitLoad, Timeout: time.Minute,
		Do: func(ctx context.Context, req *http.Request) (*http.Response, error) {
			return http.DefaultTransport.RoundTrip(req)
		}})
	if err != nil {
		t.Fatal(err)
	}
	_, list, ok := strings.Cut(string(rendered.HTML), `<pre id="hrefs">`)
	list, _, ok2 := strings.Cut(list, "</pre>")
	var hrefs []string
	if !ok || !ok2 || json.Unmarshal([]byte(html.UnescapeString(list)), &hrefs) != nil {
		t.Fatalf("the rendered page lists no hrefs: %s", rendered.HTML)
	}
	for i, h := range hrefs {
		if want := site.URL + refLinks[i].request; h != want {
			t.Errorf("Chromium makes %q of %q, the test expects %q", h, refLinks[i].href, want)
		}
	}
	if len(hrefs) != len(refLinks) {
		t.Errorf("Chromium found %d links, want %d: %q", len(hrefs), len(refLinks), hrefs)
	}

	site = refSite(t)
	cfg, _ := testConfig(t, fmt.Sprintf("browser: {path: %s, tabs: 1}", browser),
		"honored_query_params: [\"*\"]\nrender: {enabled: true, wait: load, timeout: 60s}", site.URL+"/")
	crawlKeep(t, cfg)
	wantRequested(t, site, refRequests()...)
}

// A sitemap is XML, where a reference always ends in ';': its raw "&" (the
// commonest sitemap fault) and its "&amp;" give the query as written, and
// "&#x80;" is U+0080, not HTML's "€".
func TestSitemapURLsWithReferencesAreRequestedAsXMLReadsThem(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", "")
	site.text("/sitemap.xml", "application/xml", urlset(site.URL+"/search?q=a&section=news", site.URL+"/list?a=1&amp;region=eu",
		site.URL+"/mark?a=&sect", site.URL+"/ctl?c=&#x80;"))
	for _, p := range []string{"/search", "/list", "/mark", "/ctl"} {
		site.html(p, p, "")
	}
	cfg, _ := testConfig(t, "", fmt.Sprintf("honored_query_params: [\"*\"]\nsitemaps: [%q]", site.URL+"/sitemap.xml"), site.URL+"/")

	crawlKeep(t, cfg)

	wantRequested(t, site, "/", "/robots.txt", "/sitemap.xml", "/search?q=a&section=news", "/list?a=1&region=eu", "/mark?a=&sect", "/ctl?c=%C2%80")
}
