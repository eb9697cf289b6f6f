package provider_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/chromiumtest"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
)

// requestLog is a loopback server that records every request it gets:
// method, path and Authorization header, when it began and ended.
type requestLog struct {
	*httptest.Server
	mu       sync.Mutex
	seen     []seenRequest
	inFlight int
	// most is the largest number of requests it answered at once.
	most int
}

type seenRequest struct {
	method, path, auth string
	start, end         time.Time
}

func newRequestLog(t *testing.T, serve func(w http.ResponseWriter, r *http.Request)) *requestLog {
	t.Helper()
	l := &requestLog{}
	l.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.inFlight++
		l.most = max(l.most, l.inFlight)
		i := len(l.seen)
		l.seen = append(l.seen, seenRequest{method: r.Method, path: r.URL.Path, auth: r.Header.Get("Authorization"), start: time.Now()})
		l.mu.Unlock()
		serve(w, r)
		l.mu.Lock()
		l.inFlight--
		l.seen[i].end = time.Now()
		l.mu.Unlock()
	}))
	t.Cleanup(l.Close)
	return l
}

func (l *requestLog) requests() []seenRequest {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.seen)
}

func answer(w http.ResponseWriter, contentType, body string) {
	w.Header().Set("Content-Type", contentType)
	// The page's scripts read it from another origin.
	w.Header().Set("Access-Control-Allow-Origin", "*")
	fmt.Fprint(w, body)
}

// TestARenderedPageChangesNothingSendsNoCredentialsAwayAndNeverReachesAnExcludedHost
// crawls, with basic credentials, a page whose scripts try to delete the
// site's data (POST and DELETE), to read and post to a host the crawl
// rules exclude, to load a script from it, to read a path robots.txt
// disallows, and read a script and data from a partner host the rules
// allow; and a page that opens an alert, a confirm and a prompt. The
// servers' request logs show only GET and HEAD, no credentials off the
// source's host, not one request to the excluded host nor to the
// disallowed path; the indexed document holds what the allowed requests
// gave and nothing of the refused ones; the page with dialogs is indexed,
// its dialogs noted.
func TestARenderedPageChangesNothingSendsNoCredentialsAwayAndNeverReachesAnExcludedHost(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	esURL := estest.URL(t)
	index := estest.Index(t)

	excluded := newRequestLog(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/tracker.js":
			answer(w, "text/javascript", `document.body.insertAdjacentText('beforeend', ' Tracker text');`)
		default:
			answer(w, "text/plain", "Excluded host text")
		}
	})
	partner := newRequestLog(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/lib.js":
			answer(w, "text/javascript", `document.body.insertAdjacentText('beforeend', ' Partner widget text');`)
		case "/data.json":
			answer(w, "text/plain", "Partner API text")
		default:
			http.NotFound(w, r)
		}
	})
	var site *requestLog
	site = newRequestLog(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			answer(w, "text/plain", "User-agent: *\nDisallow: /private/\n")
		case "/":
			answer(w, "text/html", fmt.Sprintf(`<!doctype html><html><head><title>Orders</title></head><body>
<p>Order list</p><a href="/dialogs">dialogs</a>
<script src="%[1]s/lib.js"></script>
<script src="%[2]s/tracker.js"></script>
<script>
const add = p => p.then(r => r.text()).then(t => document.body.insertAdjacentText('beforeend', ' ' + t)).catch(() => {});
fetch('/api/items', {method: 'POST', body: 'action=delete-all'}).catch(() => {});
fetch('/api/items', {method: 'DELETE'}).catch(() => {});
fetch('%[2]s/collect', {method: 'POST', body: 'action=delete-all'}).catch(() => {});
add(fetch('/api/items'));
add(fetch('%[1]s/data.json'));
add(fetch('%[2]s/data.json'));
add(fetch('/private/data.json'));
</script></body></html>`, partner.URL, excluded.URL))
		case "/dialogs":
			answer(w, "text/html", `<!doctype html><html><head><title>Dialogs</title></head><body><p id="p">shell</p><script>
alert('Welcome');
const ok = confirm('Delete everything?');
const name = prompt('Your name?');
document.getElementById('p').textContent = 'Written after the dialogs: ' + ok + ' ' + name;
</script></body></html>`)
		case "/api/items":
			answer(w, "text/plain", "Site API text "+r.Method)
		case "/private/data.json":
			answer(w, "text/plain", "Robots private text")
		default:
			http.NotFound(w, r)
		}
	})

	yaml := fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
state_dir: %s
allow_private_networks: true
browser: {path: %s, tabs: 2}
sources:
  - name: shop
    start_urls: [%q]
    exclude: [%q]
    auth: {method: basic, username: crawler, password: s3cret}
    render: {enabled: true, wait: network_idle, timeout: 30s}
`, esURL, index, t.TempDir(), browser, site.URL+"/", strings.TrimPrefix(excluded.URL, "http://"))
	c, report := crawlTimed(t, crawltest.Config(t, yaml), provider.Timing{})

	for _, r := range site.requests() {
		if r.method != http.MethodGet && r.method != http.MethodHead {
			t.Errorf("the site got %s %s (Authorization %q) from a rendered page", r.method, r.path, r.auth)
		}
		if r.path == "/private/data.json" {
			t.Errorf("the site got %s, which its robots.txt disallows", r.path)
		}
		if r.auth == "" && r.path != "/robots.txt" {
			t.Errorf("the site got %s %s without the source's credentials", r.method, r.path)
		}
	}
	for _, r := range partner.requests() {
		if r.auth != "" {
			t.Errorf("the partner host got the source's credentials with %s %s", r.method, r.path)
		}
	}
	for _, r := range excluded.requests() {
		t.Errorf("the excluded host got %s %s", r.method, r.path)
	}
	_, docs := indexed(t, esURL, index, site.URL)
	home := docs["/"]
	if home == nil {
		t.Fatalf("the page is not indexed (report %+v)", report.Total)
	}
	for _, want := range []string{"Order list", "Site API text GET", "Partner API text", "Partner widget text"} {
		if !strings.Contains(home.Body, want) {
			t.Errorf("the indexed page lacks %q: %q", want, home.Body)
		}
	}
	for _, refused := range []string{"Excluded host text", "Tracker text", "Robots private text", "POST", "DELETE"} {
		if strings.Contains(home.Body, refused) {
			t.Errorf("the indexed page holds %q, from a request that must be refused: %q", refused, home.Body)
		}
	}
	if d := docs["/dialogs"]; d == nil || !strings.Contains(d.Body, "Written after the dialogs: false null") {
		t.Errorf("the page with dialogs is indexed as %+v (report %+v)", d, report.Total)
	}
	if n := report.Total.Reasons["render_dialog"]; n != 1 {
		t.Errorf("render_dialog counted %d times, want once (reasons %v)", n, report.Total.Reasons)
	}
	evs, err := c.Frontier().History(site.URL + "/dialogs")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(evs, func(ev frontier.Event) bool {
		return ev.Kind == frontier.EventFetched && strings.Contains(ev.Detail, "render_dialog") && strings.Contains(ev.Detail, "Welcome")
	}) {
		t.Errorf("the history of the page with dialogs does not note them: %+v", evs)
	}
	ex := ""
	for _, e := range report.Examples {
		if e.Reason == "render_request_failed" && e.URL == site.URL+"/" {
			ex = e.Detail
		}
	}
	if !strings.Contains(ex, "refused") {
		t.Errorf("the page's refused requests are not reported with their cause: %q", ex)
	}
}

// TestARenderedPagesRequestsToItsHostAreMadeOneAtATimeItsDelayApart
// renders a page that asks its host for five things at once, on a source
// whose politeness wants 300 ms between requests: the host gets them one
// at a time, each at least the delay after the one before ended.
func TestARenderedPagesRequestsToItsHostAreMadeOneAtATimeItsDelayApart(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	const delay = 300 * time.Millisecond
	site := newRequestLog(t, func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			answer(w, "text/html", `<!doctype html><html><head><title>Parts</title></head><body><script>
for (let i = 1; i <= 5; i++) fetch('/part/' + i).then(r => r.text()).then(t => document.body.insertAdjacentText('beforeend', ' ' + t));
</script></body></html>`)
		case "/robots.txt":
			http.NotFound(w, r)
		default:
			answer(w, "text/plain", "part"+strings.TrimPrefix(r.URL.Path, "/part/"))
		}
	})
	yaml := fmt.Sprintf(`
output: {file: %s}
state_dir: %s
allow_private_networks: true
browser: {path: %s, tabs: 1}
sources:
  - name: parts
    start_urls: [%q]
    politeness: {delay: %s, max_parallel_per_host: 2}
    render: {enabled: true, wait: network_idle, timeout: 30s}
`, t.TempDir()+"/docs.ndjson", t.TempDir(), browser, site.URL+"/", delay)
	report := crawl(t, crawltest.Config(t, yaml))
	var parts []seenRequest
	for _, r := range site.requests() {
		if strings.HasPrefix(r.path, "/part/") {
			parts = append(parts, r)
		}
	}
	if len(parts) != 5 || report.Total.Written != 1 {
		t.Fatalf("%d parts requested, %d documents written: %+v", len(parts), report.Total.Written, report.Total)
	}
	for i := 1; i < len(parts); i++ {
		if gap := parts[i].start.Sub(parts[i-1].end); gap < delay {
			t.Errorf("%s began %s after %s ended, want at least %s", parts[i].path, gap, parts[i-1].path, delay)
		}
	}
	if site.most > 1 {
		t.Errorf("the site answered %d requests at once", site.most)
	}
}
