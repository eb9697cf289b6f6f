package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/control"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

const (
	apiToken     = "ci-token-4c1f0e9a7b2d"
	notifySecret = "notify-secret-for-the-test"
)

// changingSite is a loopback site whose pages a test rewrites.
type changingSite struct {
	*httptest.Server
	mu    sync.Mutex
	pages map[string]string
}

func newChangingSite(t *testing.T, pages map[string]string) *changingSite {
	s := &changingSite{pages: pages}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		body, ok := s.pages[r.URL.Path]
		s.mu.Unlock()
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<!doctype html><html><head><title>%s</title></head><body>%s</body></html>", r.URL.Path, body)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *changingSite) set(path, body string) {
	s.mu.Lock()
	s.pages[path] = body
	s.mu.Unlock()
}

// notifications is a loopback receiver of the service's notifications: it
// answers the first with 500 and the others with 200, and keeps each
// request whose signature verifies.
type notifications struct {
	*httptest.Server
	mu       sync.Mutex
	verified []control.Notification
	attempts []string // each request's delivery id, in order
	bad      []string
}

func newNotifications(t *testing.T) *notifications {
	n := &notifications{}
	n.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		ts, sig := r.Header.Get(control.HeaderTimestamp), r.Header.Get(control.HeaderSignature)
		n.mu.Lock()
		defer n.mu.Unlock()
		n.attempts = append(n.attempts, r.Header.Get(control.HeaderDelivery))
		var note control.Notification
		if !control.Verify([]byte(notifySecret), ts, sig, body, time.Now(), 5*time.Minute) || json.Unmarshal(body, &note) != nil {
			n.bad = append(n.bad, fmt.Sprintf("%s %s %.100s", ts, sig, body))
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if len(n.attempts) == 1 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		n.verified = append(n.verified, note)
	}))
	t.Cleanup(n.Close)
	return n
}

func (n *notifications) state() (verified []control.Notification, attempts []string, bad []string) {
	n.mu.Lock()
	defer n.mu.Unlock()
	return append([]control.Notification(nil), n.verified...), append([]string(nil), n.attempts...), append([]string(nil), n.bad...)
}

// api calls the control API of a running service.
type api struct {
	t    *testing.T
	base string
}

func (a api) call(method, path, body, token string) (int, map[string]any) {
	a.t.Helper()
	req, err := http.NewRequest(method, a.base+path, strings.NewReader(body))
	if err != nil {
		a.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		a.t.Fatal(err)
	}
	defer res.Body.Close()
	var ans map[string]any
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		a.t.Fatalf("%s %s: %d, no JSON: %v", method, path, res.StatusCode, err)
	}
	return res.StatusCode, ans
}

// doc is the indexed document of url: its body, and whether there is one.
func doc(t *testing.T, index, url string) (string, bool) {
	t.Helper()
	hits := search(t, index, fmt.Sprintf(`{"query": {"ids": {"values": [%q]}}}`, docfields.ID(url)))
	if len(hits) == 0 {
		return "", false
	}
	var d struct {
		Body string `json:"doc_body"`
	}
	json.Unmarshal(hits[0].Source, &d)
	return d.Body, true
}

// The control API of a `crawlspace run` process, called over HTTP as a CMS
// and an operator would, against the real node: a call without a token is
// refused with 401 and changes nothing; a recrawl of a changed page updates
// its document without waiting for the next discovery; a delete removes a
// document; a URL outside the crawl space is refused with its reason and
// rule; each cycle's report reaches a loopback receiver signed, verifiable,
// and again after a 500; every call is logged with its caller's name.
func TestTheControlAPIOfARunningServiceRecrawlsDeletesRefusesAndNotifies(t *testing.T) {
	t.Parallel()
	site := newChangingSite(t, map[string]string{
		"/":       `<a href="/a.html">a</a> <a href="/b.html">b</a>`,
		"/a.html": "the first version",
		"/b.html": "a page to unpublish",
	})
	hooks := newNotifications(t)
	index := estest.Index(t)
	path := crawltest.WriteConfig(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
allow_private_networks: true
log: {format: json}
service:
  address: 127.0.0.1:0
  tokens: [{name: ci, token: %s}]
  notify: [{url: %q, secret: %s}]
sources:
  - name: site
    start_urls: [%q]
    discovery_interval: 24h
    exclude: [/private/]
`, estest.URL(t), index, apiToken, hooks.URL+"/hook", notifySecret, site.URL+"/"))
	p := startProc(t, "run", "run", "-config", path)
	state := func() string { return "" }
	addr := regexp.MustCompile(`"msg":"serving the status page, /metrics and the control API","url":"(http://[^"]+)/"`)
	var base string
	waitUntil(t, func() bool {
		if m := addr.FindStringSubmatch(p.out.String()); m != nil {
			base = m[1]
		}
		return base != "" || p.exitCode() >= 0
	}, state, p)
	if base == "" {
		t.Fatalf("run exited before serving:%s", outputs(p))
	}
	a := api{t, base}
	cycles := func() float64 {
		_, ans := a.call("GET", "/api/v1/status", "", apiToken)
		n, _ := ans["cycles_finished"].(float64)
		return n
	}
	waitUntil(t, func() bool { return cycles() >= 1 }, state, p)
	if body, ok := doc(t, index, site.URL+"/a.html"); !ok || body != "the first version" {
		t.Fatalf("after the first cycle /a.html's document is %q (%v)", body, ok)
	}

	// Without a token: refused, nothing changes.
	for _, c := range []struct{ method, path, body, token string }{
		{"POST", "/api/v1/urls/delete", `{"urls": ["` + site.URL + `/b.html"]}`, ""},
		{"POST", "/api/v1/sources/site/pause", "", ""},
		{"POST", "/api/v1/urls/delete", `{"urls": ["` + site.URL + `/b.html"]}`, "not-the-token-of-anyone"},
	} {
		if status, ans := a.call(c.method, c.path, c.body, c.token); status != http.StatusUnauthorized {
			t.Errorf("%s %s with token %q: %d %v, want 401", c.method, c.path, c.token, status, ans)
		}
	}
	if _, ok := doc(t, index, site.URL+"/b.html"); !ok {
		t.Error("a refused delete removed the document")
	}
	_, status := a.call("GET", "/api/v1/status", "", apiToken)
	if src := status["sources"].([]any)[0].(map[string]any); src["paused"] != nil {
		t.Errorf("a refused pause paused the source: %v", src["paused"])
	}

	// A changed page, recrawled on request; a URL outside the crawl space refused.
	site.set("/a.html", "the second version")
	code, ans := a.call("POST", "/api/v1/urls/recrawl", `{"urls": ["`+site.URL+`/a.html", "`+site.URL+`/private/x", "https://elsewhere.example/"]}`, apiToken)
	urls, _ := ans["urls"].([]any)
	if code != 200 || len(urls) != 3 || ans["queued"] != 1.0 {
		t.Fatalf("recrawl: %d %v", code, ans)
	}
	for i, want := range []struct{ decision, reason, rule string }{
		{"queued", "", ""},
		{"refused", "excluded", "sources[0].exclude[0]"},
		{"refused", "offsite", ""},
	} {
		d := urls[i].(map[string]any)
		reason, _ := d["reason"].(string)
		rule, _ := d["rule"].(string)
		if d["decision"] != want.decision || reason != want.reason || !strings.Contains(rule, want.rule) {
			t.Errorf("recrawl decision %d: %v, want %s %q by a rule naming %q", i, d, want.decision, want.reason, want.rule)
		}
	}
	waitUntil(t, func() bool {
		body, _ := doc(t, index, site.URL+"/a.html")
		return body == "the second version"
	}, state, p)

	// A page unpublished: deleted on request.
	code, ans = a.call("POST", "/api/v1/urls/delete", `{"urls": ["`+site.URL+`/b.html"]}`, apiToken)
	if d := ans["urls"].([]any)[0].(map[string]any); code != 200 || d["decision"] != "deleted" || d["document"] != true {
		t.Fatalf("delete: %d %v", code, ans)
	}
	waitUntil(t, func() bool {
		_, ok := doc(t, index, site.URL+"/b.html")
		return !ok
	}, state, p)

	// Every cycle's report arrived signed; the first attempt's 500 was
	// answered by another attempt of the same delivery.
	waitUntil(t, func() bool {
		verified, _, _ := hooks.state()
		return len(verified) >= 1
	}, state, p)
	verified, attempts, bad := hooks.state()
	if len(bad) > 0 {
		t.Errorf("notifications that did not verify: %q", bad)
	}
	if len(attempts) < 2 || attempts[0] != attempts[1] {
		t.Errorf("deliveries %q: want the first tried again after its 500", attempts)
	}
	if r := verified[0].Report; r == nil || r.Outcome != "completed" || r.Total.Fetched != 3 || verified[0].Event != "cycle_finished" {
		t.Errorf("the first notification's report: %+v", verified[0].Report)
	}

	p.cmd.Process.Signal(syscall.SIGTERM)
	awaitExit(t, state, p)
	if code := p.exitCode(); code != exitOK {
		t.Errorf("run exited %d:%s", code, outputs(p))
	}
	out := p.out.String()
	if strings.Contains(out, apiToken) || strings.Contains(out, notifySecret) {
		t.Errorf("the log holds the token or the secret:%s", outputs(p))
	}
	for _, want := range []string{
		`"msg":"api call refused: no valid token","method":"POST","path":"/api/v1/urls/delete"`,
		`"msg":"api call","caller":"ci","method":"POST","path":"/api/v1/urls/recrawl","status":200`,
		`"msg":"api call","caller":"ci","method":"POST","path":"/api/v1/urls/delete","status":200`,
		`"msg":"a cycle asked for through the control API"`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("the log lacks %s", want)
		}
	}
}
