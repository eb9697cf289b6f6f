package control_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/control"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

const (
	cmsToken = "cms-token-0123456789abcdef"
	opsToken = "ops-token-0123456789abcdef"
)

// lockedBuffer is a log the service and the test share.
type lockedBuffer = crawltest.LockedBuffer

// fixture is the API of a real crawler over a loopback site, served on
// loopback, with its log.
type fixture struct {
	api   *httptest.Server
	c     *provider.Crawler
	site  *httptest.Server
	log   *lockedBuffer
	wakes int
	mu    sync.Mutex
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><title>%s</title></head><body><a href="/a.html">a</a></body></html>`, r.URL.Path)
	}))
	t.Cleanup(site.Close)
	return newFixtureOn(t, site, "")
}

// newFixtureOn is the fixture over site, with extra (YAML keys at the
// source's indentation) added to its source.
func newFixtureOn(t *testing.T, site *httptest.Server, extra string) *fixture {
	t.Helper()
	f := &fixture{log: &lockedBuffer{}, site: site}
	cfg := crawltest.Config(t, fmt.Sprintf(`output: {file: %q}
allow_private_networks: true
service:
  address: 127.0.0.1:0
  tokens:
    - {name: cms, token: %s}
    - {name: ops, token: %s}
sources:
  - name: site
    start_urls: [%q]
    exclude: [/private/]
%s`, t.TempDir()+"/docs.ndjson", cmsToken, opsToken, f.site.URL+"/", extra))
	f.c = crawltest.New(t, cfg)
	if _, err := f.c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewJSONHandler(f.log, nil))
	api := control.New(control.Options{Crawler: f.c, Tokens: cfg.Service.Tokens, Log: log,
		Status: func() any { return map[string]any{"cycles_finished": 1} },
		Wake: func() {
			f.mu.Lock()
			f.wakes++
			f.mu.Unlock()
		}})
	f.api = httptest.NewServer(api)
	t.Cleanup(f.api.Close)
	return f
}

func (f *fixture) woken() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.wakes
}

// call makes a request with the headers given as name, value pairs and
// returns the status and the decoded JSON answer.
func (f *fixture) call(t *testing.T, method, path, body string, headers ...string) (int, map[string]any) {
	t.Helper()
	req, err := http.NewRequest(method, f.api.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	raw, _ := io.ReadAll(res.Body)
	var ans map[string]any
	if err := json.Unmarshal(raw, &ans); err != nil {
		t.Fatalf("%s %s answered %d with no JSON object: %q", method, path, res.StatusCode, raw)
	}
	return res.StatusCode, ans
}

func bearer(tok string) []string { return []string{"Authorization", "Bearer " + tok} }

// Every call of the OpenAPI document is served, and every call served is
// in the document, with the same methods.
func TestTheServedCallsAreTheOpenAPIDocumentsCalls(t *testing.T) {
	f := newFixture(t)
	res, err := http.Get(f.api.URL + control.OpenAPIPath)
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	if err := json.NewDecoder(res.Body).Decode(&doc); err != nil || res.StatusCode != 200 || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("the served OpenAPI document: %d, %v, version %q", res.StatusCode, err, doc.OpenAPI)
	}
	res.Body.Close()
	documented := map[string]bool{}
	for path, ops := range doc.Paths {
		for method := range ops {
			documented[strings.ToUpper(method)+" "+path] = true
		}
	}
	served := map[string]bool{"GET " + control.OpenAPIPath: true}
	for _, r := range control.Routes {
		served[r.Method+" "+r.Path] = true
	}
	if !maps.Equal(documented, served) {
		t.Errorf("documented calls %v\nserved calls %v", slices.Sorted(maps.Keys(documented)), slices.Sorted(maps.Keys(served)))
	}
	// Each is answered by its handler: with a token, neither 404 nor 405.
	for call := range served {
		method, path, _ := strings.Cut(call, " ")
		path = strings.ReplaceAll(path, "{source}", "site")
		body := ""
		if strings.HasPrefix(path, "/api/v1/urls/") {
			body = `{"urls": ["` + f.site.URL + `/private/x"]}`
		}
		if status, ans := f.call(t, method, path, body, bearer(opsToken)...); status == 404 || status == 405 || status >= 500 {
			t.Errorf("%s answered %d: %v", call, status, ans)
		}
	}
	if status, _ := f.call(t, "GET", "/api/v1/nothing", "", bearer(opsToken)...); status != 404 {
		t.Errorf("an unknown call answered %d, want 404", status)
	}
	if status, ans := f.call(t, "GET", "/api/v1/cycles", "", bearer(opsToken)...); status != 405 {
		t.Errorf("GET of a POST call answered %d (%v), want 405", status, ans)
	}
}

// A call without a token, or with a wrong one, is refused with 401 and
// changes nothing; the refusal is logged without the token; a call with a
// token is logged with the token's name, never the token.
func TestCallsWithoutAValidTokenAreRefusedAndChangeNothing(t *testing.T) {
	f := newFixture(t)
	// Every call served, a new one included, and an unknown one.
	calls := []struct{ method, path, body string }{{"GET", "/api/v1/nothing", ""}}
	for _, r := range control.Routes {
		body := ""
		if strings.HasPrefix(r.Path, "/api/v1/urls/") {
			body = `{"urls": ["` + f.site.URL + `/a.html"]}`
		}
		calls = append(calls, struct{ method, path, body string }{r.Method, strings.ReplaceAll(r.Path, "{source}", "site"), body})
	}
	for _, h := range [][]string{nil, bearer("wrong-token-0123456789"), {"Authorization", "Basic " + cmsToken}, bearer("")} {
		for _, call := range calls {
			status, ans := f.call(t, call.method, call.path, call.body, h...)
			if status != http.StatusUnauthorized || !strings.Contains(ans["error"].(string), "token") {
				t.Errorf("%s %s with %q: %d %v, want 401", call.method, call.path, h, status, ans)
			}
		}
	}
	if p := f.c.Paused(); len(p) != 0 {
		t.Errorf("a refused pause paused %v", p)
	}
	r, _, _ := f.c.Frontier().Get(f.site.URL + "/a.html")
	if r.State.String() != "fetched" || !r.Indexed && r.Pending == "" {
		t.Errorf("a refused delete changed the page: %s, indexed %v, pending %q", r.State, r.Indexed, r.Pending)
	}
	if f.woken() != 0 {
		t.Errorf("a refused call woke the service %d times", f.woken())
	}

	status, ans := f.call(t, "POST", "/api/v1/sources/site/pause", "", "X-Crawlspace-Token", cmsToken)
	if status != 200 || ans["by"] != "cms" || ans["paused"] != true {
		t.Fatalf("pause with X-Crawlspace-Token: %d %v", status, ans)
	}
	log := f.log.String()
	for _, tok := range []string{cmsToken, opsToken, "wrong-token-0123456789"} {
		if strings.Contains(log, tok) {
			t.Errorf("the log holds a token: %s", log)
		}
	}
	if !strings.Contains(log, `"msg":"api call refused: no valid token"`) || !strings.Contains(log, `"msg":"api call","caller":"cms","method":"POST","path":"/api/v1/sources/site/pause","status":200`) {
		t.Errorf("the log lacks the refusals or the call with its caller:\n%s", log)
	}
}

func TestAnAPIWithoutTokensRefusesEveryCallAndSaysWhy(t *testing.T) {
	api := httptest.NewServer(control.New(control.Options{Tokens: nil, Status: func() any { return nil }, Log: slog.New(slog.DiscardHandler)}))
	defer api.Close()
	res, err := http.Get(api.URL + "/api/v1/status")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 401 || !strings.Contains(string(raw), "no API token is configured (service.tokens)") {
		t.Errorf("%d %s", res.StatusCode, raw)
	}
}

// The calls do what they say, and answer each URL's decision.
func TestTheCallsPauseResumeStartRecrawlAndDelete(t *testing.T) {
	f := newFixture(t)
	tok := bearer(opsToken)
	status, ans := f.call(t, "POST", "/api/v1/sources/nope/pause", "", tok...)
	if status != 404 || !strings.Contains(ans["error"].(string), `no such source: "nope"`) {
		t.Errorf("pause of an unknown source: %d %v", status, ans)
	}
	if status, ans = f.call(t, "POST", "/api/v1/sources/site/pause", "", tok...); status != 200 || ans["by"] != "ops" {
		t.Fatalf("pause: %d %v", status, ans)
	}
	if _, ok := f.c.Paused()["site"]; !ok {
		t.Error("the source is not paused")
	}
	if status, ans = f.call(t, "POST", "/api/v1/sources/site/resume", "", tok...); status != 200 || ans["was_paused"] != true || ans["paused"] != false {
		t.Fatalf("resume: %d %v", status, ans)
	}
	if status, ans = f.call(t, "POST", "/api/v1/cycles", `{"sources": ["site"]}`, tok...); status != 202 || ans["cycle_running"] != false {
		t.Fatalf("cycles: %d %v", status, ans)
	}
	if status, ans = f.call(t, "POST", "/api/v1/cycles", `{"sources": ["nope"]}`, tok...); status != 404 {
		t.Errorf("a cycle of an unknown source: %d %v", status, ans)
	}
	if status, ans = f.call(t, "POST", "/api/v1/cycles", `{"source": ["site"]}`, tok...); status != 400 || !strings.Contains(ans["error"].(string), `unknown field "source"`) {
		t.Errorf("a misspelt field: %d %v", status, ans)
	}
	if status, ans = f.call(t, "POST", "/api/v1/urls/recrawl", `{"urls": []}`, tok...); status != 400 {
		t.Errorf("no URLs: %d %v", status, ans)
	}
	status, ans = f.call(t, "POST", "/api/v1/urls/recrawl", `{"urls": ["`+f.site.URL+`/a.html", "`+f.site.URL+`/private/p", "https://elsewhere.example/"]}`, tok...)
	if status != 200 || ans["queued"] != 1.0 || ans["refused"] != 2.0 {
		t.Fatalf("recrawl: %d %v", status, ans)
	}
	refused := ans["urls"].([]any)[1].(map[string]any)
	if refused["decision"] != "refused" || refused["reason"] != "excluded" || !strings.Contains(refused["rule"].(string), "sources[0].exclude[0]") {
		t.Errorf("an excluded URL's decision: %v", refused)
	}
	status, ans = f.call(t, "POST", "/api/v1/urls/delete", `{"urls": ["`+f.site.URL+`/"]}`, tok...)
	if d := ans["urls"].([]any)[0].(map[string]any); status != 200 || d["decision"] != "deleted" || d["document"] != true {
		t.Fatalf("delete: %d %v", status, ans)
	}
	if f.woken() != 3 {
		t.Errorf("the calls woke the service %d times, want 3 (resume, cycles, recrawl)", f.woken())
	}
	var many []string
	for i := range control.MaxURLs + 1 {
		many = append(many, fmt.Sprintf(`"%s/p%d"`, f.site.URL, i))
	}
	if status, ans = f.call(t, "POST", "/api/v1/urls/recrawl", `{"urls": [`+strings.Join(many, ",")+`]}`, tok...); status != 400 {
		t.Errorf("%d URLs: %d %v", len(many), status, ans)
	}
}

// A confirmation through the API sends the deletes a source's guard holds,
// as confirm-deletes does; without a token it sends nothing.
func TestConfirmDeletesSendsTheHeldDeletes(t *testing.T) {
	t.Parallel()
	var gone atomic.Bool
	f := newFixtureOn(t, crawltest.VanishingSite(t, 2, &gone), `    max_age: 1ns
    hold_deletes: {min_count: 0}
`)
	gone.Store(true)
	if _, err := f.c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
	held := func() int {
		h, err := f.c.HeldDeletes("site")
		if err != nil {
			t.Fatal(err)
		}
		if h == nil {
			return 0
		}
		return h.Count
	}
	if n := held(); n != 3 {
		t.Fatalf("the cycle of a vanished site holds %d deletes, want 3", n)
	}
	path := "/api/v1/sources/site/confirm-deletes"
	if status, ans := f.call(t, "POST", path, ""); status != 401 || held() != 3 {
		t.Errorf("a confirmation without a token: %d %v, %d deletes held; want 401 and 3 held", status, ans, held())
	}
	if status, ans := f.call(t, "POST", "/api/v1/sources/nope/confirm-deletes", "", bearer(opsToken)...); status != 404 {
		t.Errorf("a confirmation of an unknown source: %d %v, want 404", status, ans)
	}
	if status, ans := f.call(t, "POST", path, "", bearer(opsToken)...); status != 200 || ans["sent"] != 3.0 || ans["source"] != "site" {
		t.Errorf("confirmation: %d %v, want 200 and 3 sent", status, ans)
	}
	if n := held(); n != 0 {
		t.Errorf("%d deletes held after the confirmation", n)
	}
	r, _, _ := f.c.Frontier().Get(f.site.URL + "/p/1")
	if r.Indexed || r.Pending != "" {
		t.Errorf("a confirmed delete's page: indexed %v, pending %q; want its delete landed", r.Indexed, r.Pending)
	}
	if !strings.Contains(f.log.String(), `"path":"/api/v1/sources/site/confirm-deletes","status":200`) ||
		!strings.Contains(f.log.String(), `"sent":3`) {
		t.Errorf("the log lacks the confirmation with its count:\n%s", f.log)
	}
}

var _ control.Crawler = (*provider.Crawler)(nil)
