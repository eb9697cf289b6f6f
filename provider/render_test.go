package provider_test

import (
	"encoding/json"
	"fmt"
	"net"
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

// spaShell is the one document of a single-page app: every route of the
// site answers with it (the history API fallback), and its router builds
// the page from the API after load. Its links are real URLs, which the
// router also takes over on a click.
const spaShell = `<!doctype html><html><head><title>Catalogue</title></head><body>
<img src="/logo.png"><div id="app">Loading…</div>
<script>
function show(path) {
  fetch('/api' + (path === '/' ? '/home' : path)).then(r => {
    if (!r.ok) throw new Error('api ' + r.status);
    return r.json();
  }).then(d => {
    document.title = d.title;
    document.getElementById('app').innerHTML = '<h1>' + d.title + '</h1><p>' + d.text + '</p>' +
      (d.links || []).map(l => '<a href="' + l + '">' + l + '</a>').join(' ');
  });
}
document.addEventListener('click', e => {
  const a = e.target.closest('a');
  if (a && a.origin === location.origin) { e.preventDefault(); history.pushState({}, '', a.href); show(location.pathname); }
});
show(location.pathname);
%s
</script></body></html>`

// renderYAML is the configuration of a rendering test: the node and
// index, the state directory, the browser and its tabs, then sources, the
// YAML of the sources list.
func renderYAML(esURL, index, state, browser string, tabs int, sources string) string {
	return fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0}
state_dir: %s
allow_private_networks: true
browser: {path: %s, tabs: %d}
sources:%s`, esURL, index, state, browser, tabs, sources)
}

// spaSite is a single-page app on loopback: the shell, its JSON API
// (which wants the source's bearer token), and pages that misbehave.
type spaSite struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
	// notModified counts the shell's 304 answers.
	notModified int
}

func (s *spaSite) hit(p string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[p]
}

func newSPASite(t *testing.T, extraScript string) *spaSite {
	t.Helper()
	api := map[string]any{
		"/api/home":       map[string]any{"title": "Home", "text": "Welcome to the lamp catalogue", "links": []string{"/products/1", "/products/2", "/never-idle", "/redirector", "/throws"}},
		"/api/products/1": map[string]any{"title": "Brass lamp", "text": "A brass lamp with a green shade"},
		"/api/products/2": map[string]any{"title": "Floor lamp", "text": "A tall floor lamp of oak"},
		"/api/products/3": map[string]any{"title": "Desk lamp", "text": "A desk lamp on a spring arm"},
	}
	s := &spaSite{hits: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		html := func(body string) {
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, body)
		}
		switch p := r.URL.Path; {
		case strings.HasPrefix(p, "/api/"):
			if r.Header.Get("Authorization") != "Bearer t0ken" {
				http.Error(w, "no token", http.StatusUnauthorized)
				return
			}
			d, ok := api[p]
			if !ok {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			_ = json.NewEncoder(w).Encode(d)
		case p == "/never-idle":
			html(`<!doctype html><html><head><title>Ticker</title></head><body><p id="t">static</p><script>
document.getElementById('t').textContent = 'Live ticker of lamp prices';
setInterval(() => fetch('/api/poll').catch(() => {}), 100);
</script></body></html>`)
		case p == "/redirector":
			html(`<!doctype html><html><head><title>Moved</title></head><body><p>This lamp moved.</p><script>
setTimeout(() => { location.href = '/products/3'; }, 20);
</script></body></html>`)
		case p == "/throws":
			html(`<!doctype html><html><head><title>Broken</title></head><body><p id="a"></p><p id="b"></p>
<script>document.getElementById('a').textContent = 'Written before the error'; null.boom();</script>
<script>document.getElementById('b').textContent = 'Written by the next script';</script></body></html>`)
		case p == "/" || strings.HasPrefix(p, "/products/"):
			// The shell never changes: its ETag makes the aged check a 304.
			w.Header().Set("ETag", `"shell-1"`)
			if r.Header.Get("If-None-Match") == `"shell-1"` {
				s.mu.Lock()
				s.notModified++
				s.mu.Unlock()
				w.WriteHeader(http.StatusNotModified)
				return
			}
			html(fmt.Sprintf(spaShell, extraScript))
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	return s
}

// TestASinglePageAppIsIndexedFromTheDOMItsScriptsBuildAndAnUnchangedPageIsNotRenderedAgain
// crawls a single-page app into the real node: content loaded with fetch()
// after load (with the source's bearer token), client-side routes with
// real URLs, a page that never reaches network idle, a script that
// navigates away and one that throws; images never requested, a request to
// an address the rules forbid refused. A second crawl finds the shell
// unchanged (304) and renders nothing.
func TestASinglePageAppIsIndexedFromTheDOMItsScriptsBuildAndAnUnchangedPageIsNotRenderedAgain(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	esURL := estest.URL(t)
	index := estest.Index(t)

	// A service on another loopback address, which the source's rules
	// forbid: the page's script asks it for a secret.
	l, err := net.Listen("tcp", "127.0.0.2:0")
	if err != nil {
		t.Skipf("no second loopback address: %v", err)
	}
	var secretHits sync.Map
	secret := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		secretHits.Store(r.URL.Path, true)
		fmt.Fprint(w, `{"secret": "the vault code"}`)
	}))
	secret.Listener.Close()
	secret.Listener = l
	secret.Start()
	t.Cleanup(secret.Close)

	site := newSPASite(t, `fetch('`+secret.URL+`/secret').then(r => r.text()).then(t => { document.body.insertAdjacentText('beforeend', t); }).catch(() => {});`)
	state := t.TempDir()
	yaml := renderYAML(esURL, index, state, browser, 2, fmt.Sprintf(`
  - name: shop
    start_urls: [%q]
    max_age: 1ms
    rules: ["forbid address 127.0.0.2"]
    auth: {method: bearer, token: t0ken}
    render: {enabled: true, wait: network_idle, timeout: 30s}
    crawl_rules:
      - {match: {path: /never-idle}, render: {timeout: 2s}}
`, site.URL+"/"))

	first := crawl(t, crawltest.Config(t, yaml))
	paths, docs := indexed(t, esURL, index, site.URL)
	want := []string{"/", "/never-idle", "/products/1", "/products/2", "/products/3", "/redirector", "/throws"}
	if !slices.Equal(paths, want) {
		t.Fatalf("the index holds %v, want %v (report %+v)", paths, want, first.Total)
	}
	for _, tc := range []struct{ path, title, body string }{
		{"/", "Home", "Welcome to the lamp catalogue"},
		{"/products/1", "Brass lamp", "A brass lamp with a green shade"},
		{"/products/2", "Floor lamp", "A tall floor lamp of oak"},
		// Found only where the script tried to take the tab.
		{"/products/3", "Desk lamp", "A desk lamp on a spring arm"},
		{"/never-idle", "Ticker", "Live ticker of lamp prices"},
		{"/throws", "Broken", "Written before the error"},
		{"/throws", "Broken", "Written by the next script"},
	} {
		d := docs[tc.path]
		if d.Title != tc.title || !strings.Contains(d.Body, tc.body) {
			t.Errorf("%s: title %q body %q, want title %q and %q in the body", tc.path, d.Title, d.Body, tc.title, tc.body)
		}
	}
	if strings.Contains(docs["/"].Body, "vault") {
		t.Error("the page holds what the forbidden address answered")
	}
	secretHits.Range(func(k, _ any) bool {
		t.Errorf("the forbidden address got a request for %v", k)
		return true
	})
	if n := site.hit("/logo.png"); n != 0 {
		t.Errorf("the image was requested %d times", n)
	}
	for reason, n := range map[string]int{"render_timeout": 1, "script_error": 1} {
		if got := first.Total.Reasons[reason]; got != n {
			t.Errorf("reason %s counted %d times, want %d (reasons %v)", reason, got, n, first.Total.Reasons)
		}
	}
	// Every shell page asked for the secret; the address rules refused each.
	if got := first.Total.Reasons["render_request_failed"]; got < 4 {
		t.Errorf("render_request_failed counted %d times, want one per shell page (reasons %v)", got, first.Total.Reasons)
	}

	apiBefore := site.hit("/api/home") + site.hit("/api/products/1")
	letMaxAgePass(t)
	second := crawl(t, crawltest.Config(t, yaml))
	if got := site.hit("/api/home") + site.hit("/api/products/1"); got != apiBefore {
		t.Errorf("the API was asked %d more times in a crawl where the shell was not modified: unchanged pages were rendered", got-apiBefore)
	}
	site.mu.Lock()
	nm := site.notModified
	site.mu.Unlock()
	if nm < 4 || second.Total.Unchanged < 4 {
		t.Errorf("%d not-modified answers, %d unchanged pages in the second crawl: the aged check is a conditional GET", nm, second.Total.Unchanged)
	}
	if second.Total.Created+second.Total.Updated+second.Total.Deleted != 0 {
		t.Errorf("the second crawl wrote: %+v", second.Total)
	}
}

// TestAPageTheBrowserCannotRenderWaitsAsATemporaryErrorAndKeepsItsDocument
// crawls a page read as fetched, then with rendering on and a browser that
// will not start: the changed page is an error of its own reason, tried
// again after a backoff, and its document stays in the index until
// max_temporary_errors in a row.
func TestAPageTheBrowserCannotRenderWaitsAsATemporaryErrorAndKeepsItsDocument(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	version := "first"
	var mu sync.Mutex
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		v := version
		mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<!doctype html><title>Page</title><p>the %s version</p>", v)
	}))
	t.Cleanup(site.Close)
	state := t.TempDir()
	cfg := func(render bool) string {
		return renderYAML(esURL, index, state, "/bin/false", 2, fmt.Sprintf(`
  - name: s
    start_urls: [%q]
    max_age: 1ms
    max_temporary_errors: 5
    render: {enabled: %v}
`, site.URL+"/", render))
	}
	if r := crawl(t, crawltest.Config(t, cfg(false))); r.Total.Created != 1 {
		t.Fatalf("first crawl: %+v", r.Total)
	}
	mu.Lock()
	version = "second"
	mu.Unlock()
	letMaxAgePass(t)
	c, report := crawlTimed(t, crawltest.Config(t, cfg(true)), provider.Timing{RetryBase: time.Millisecond})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if report.Total.Reasons["browser_unavailable"] == 0 || report.Total.Deleted != 0 || report.Total.Updated != 0 {
		t.Errorf("second crawl: %+v, want browser_unavailable and nothing written", report.Total)
	}
	_, docs := indexed(t, esURL, index, site.URL)
	if d := docs["/"]; d == nil || !strings.Contains(d.Body, "the first version") {
		t.Errorf("the document after a failed render: %+v, want the first version kept", d)
	}
}

// TestTurningRenderingOnOrOffReadsTheIndexedPagesAgainThoughTheirShellIsUnchanged
// crawls a single-page app read as fetched (its documents are the empty
// shell), then with rendering turned on, then off again. The shell never
// changes, so an aged check alone would answer 304 and keep each time the
// document of the setting before: the change of rendering has the indexed
// pages read again, whole, and each crawl's documents are what its setting
// makes of them.
func TestTurningRenderingOnOrOffReadsTheIndexedPagesAgainThoughTheirShellIsUnchanged(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := newSPASite(t, "")
	state := t.TempDir()
	// The home page alone: the pages its script links to are not this
	// test's, and one of them, never idle, held the render its whole
	// timeout.
	config := func(render string) string {
		return renderYAML(esURL, index, state, browser, 1, fmt.Sprintf(`
  - name: shop
    start_urls: [%q]
    max_age: 1ms
    include: ["regexp:/$"]
    auth: {method: bearer, token: t0ken}
    render: {enabled: %s, wait: network_idle, timeout: 30s}
`, site.URL+"/", render))
	}
	home := func(step string) string {
		t.Helper()
		_, docs := indexed(t, esURL, index, site.URL)
		d := docs["/"]
		if d == nil {
			t.Fatalf("%s: the home page is not in the index", step)
		}
		return d.Body
	}

	crawl(t, crawltest.Config(t, config("false")))
	if body := home("read as fetched"); strings.Contains(body, "Welcome") || !strings.Contains(body, "Loading") {
		t.Fatalf("read as fetched, the home page's body is %q, want the shell's", body)
	}

	letMaxAgePass(t) // the aged check is due
	on := crawl(t, crawltest.Config(t, config("true")))
	if body := home("rendering on"); !strings.Contains(body, "Welcome to the lamp catalogue") {
		t.Errorf("with rendering turned on the home page's body is %q, want what its script builds (report %+v)", body, on.Total)
	}
	if on.Total.Updated != 1 {
		t.Errorf("turning rendering on updated %d documents, want the home page's (report %+v)", on.Total.Updated, on.Total)
	}

	letMaxAgePass(t)
	off := crawl(t, crawltest.Config(t, config("false")))
	if body := home("rendering off"); strings.Contains(body, "Welcome") {
		t.Errorf("with rendering turned off again the home page's body is %q, want the shell's (report %+v)", body, off.Total)
	}

	letMaxAgePass(t)
	again := crawl(t, crawltest.Config(t, config("false")))
	if again.Total.Created+again.Total.Updated+again.Total.Deleted != 0 || again.Total.Unchanged < 1 {
		t.Errorf("a crawl with rendering unchanged wrote or read whole: %+v", again.Total)
	}
}

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
	site := newRequestLog(t, func(w http.ResponseWriter, r *http.Request) {
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

	yaml := renderYAML(esURL, index, t.TempDir(), browser, 2, fmt.Sprintf(`
  - name: shop
    start_urls: [%q]
    exclude: [%q]
    auth: {method: basic, username: crawler, password: s3cret}
    render: {enabled: true, wait: network_idle, timeout: 30s}
`, site.URL+"/", strings.TrimPrefix(excluded.URL, "http://")))
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
// whose politeness wants 50 ms between requests: the host gets them one
// at a time, each at least the delay after the one before ended.
func TestARenderedPagesRequestsToItsHostAreMadeOneAtATimeItsDelayApart(t *testing.T) {
	t.Parallel()
	browser := chromiumtest.Path(t)
	const delay = 50 * time.Millisecond
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
