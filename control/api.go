// Package control is the control API of `crawlspace run` (docs/api.md):
// HTTP calls on the service's address that start cycles, pause and resume
// sources, crawl or delete URLs at once, confirm a source's held deletes
// and read the status, each authenticated by a named bearer token; and the
// notifications the service sends at the end of each cycle, signed with
// HMAC-SHA256.
package control

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
)

// Crawler is what the API asks of the running crawler.
type Crawler interface {
	PauseSource(name, by string) (provider.Pause, error)
	ResumeSource(name string) (bool, error)
	DiscoverNow(names ...string) error
	Recrawl(urls []string) ([]provider.URLDecision, error)
	Remove(ctx context.Context, urls []string) ([]provider.URLDecision, error)
	// ConfirmDeletes sends the deletes a source's hold_deletes holds, as
	// `crawlspace confirm-deletes` does.
	ConfirmDeletes(ctx context.Context, source string) (int, error)
	// Current is the running cycle's report, or the last one's.
	Current() *provider.Report
}

// Options are what an API serves with.
type Options struct {
	Crawler Crawler
	// Status is what the status page shows, served as it is.
	Status func() any
	// Wake has the service start a cycle now, or as soon as the running
	// one ends.
	Wake func()
	// Tokens are the callers the API accepts.
	Tokens []config.APIToken
	Log    *slog.Logger
	// Now is the crawler's clock, which times the calls for the log;
	// time.Now when nil.
	Now func() time.Time
}

// Bounds of a request.
const (
	// MaxURLs is how many URLs one call may name.
	MaxURLs = 1000
	// maxBody bounds a request's body: MaxURLs URLs of the longest length
	// a source allows fit in it.
	maxBody = 4 << 20
)

// OpenAPIPath is where the API's OpenAPI document is served.
const OpenAPIPath = "/api/v1/openapi.json"

//go:embed openapi.json
var openAPI []byte

// OpenAPI is the OpenAPI document of the API, as served.
func OpenAPI() []byte { return openAPI }

// API serves the control API.
type API struct {
	o      Options
	tokens []token
	mux    *http.ServeMux
}

type token struct {
	name string
	sum  [sha256.Size]byte
}

// Route is one call of the API: its method and path pattern, as the
// OpenAPI document names them.
type Route struct {
	Method, Path string
	handle       func(*API, http.ResponseWriter, *http.Request, string) (int, any)
}

// Routes are the API's calls but the OpenAPI document's own.
var Routes = []Route{
	{"GET", "/api/v1/status", (*API).status},
	{"POST", "/api/v1/cycles", (*API).startCycle},
	{"POST", "/api/v1/sources/{source}/pause", (*API).pause},
	{"POST", "/api/v1/sources/{source}/resume", (*API).resume},
	{"POST", "/api/v1/sources/{source}/confirm-deletes", (*API).confirmDeletes},
	{"POST", "/api/v1/urls/recrawl", (*API).recrawl},
	{"POST", "/api/v1/urls/delete", (*API).remove},
}

// New prepares the API.
func New(o Options) *API {
	if o.Log == nil {
		o.Log = slog.Default()
	}
	if o.Wake == nil {
		o.Wake = func() {}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	a := &API{o: o, mux: http.NewServeMux()}
	for _, t := range o.Tokens {
		a.tokens = append(a.tokens, token{name: t.Name, sum: sha256.Sum256([]byte(t.Token))})
	}
	for _, r := range Routes {
		a.mux.HandleFunc(r.Method+" "+r.Path, func(w http.ResponseWriter, req *http.Request) {
			a.serve(w, req, r)
		})
	}
	return a
}

// ServeHTTP authenticates every call but the OpenAPI document's, then
// routes it. An unknown path or method is answered only to a caller with
// a token.
func (a *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == OpenAPIPath && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		w.Header().Set("Content-Type", "application/json")
		w.Write(openAPI)
		return
	}
	caller, ok := a.caller(r)
	if !ok {
		a.o.Log.Warn("api call refused: no valid token", "method", r.Method, "path", r.URL.Path, "remote", r.RemoteAddr)
		w.Header().Set("WWW-Authenticate", `Bearer realm="crawlspace"`)
		a.write(w, http.StatusUnauthorized, errorBody(a.refusal()))
		return
	}
	if _, pattern := a.mux.Handler(r); pattern == "" {
		status, msg := http.StatusNotFound, "no such call: the calls are listed at "+OpenAPIPath
		if allow := a.allowed(r); allow != "" {
			w.Header().Set("Allow", allow)
			status, msg = http.StatusMethodNotAllowed, r.Method+" is not a method of "+r.URL.Path+": "+allow
		}
		a.o.Log.Info("api call", "caller", caller, "method", r.Method, "path", r.URL.Path, "status", status, "remote", r.RemoteAddr)
		a.write(w, status, errorBody(msg))
		return
	}
	a.mux.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), callerKey{}, caller)))
}

// allowed lists the methods of the call whose path r names, "" when none.
func (a *API) allowed(r *http.Request) string {
	var methods []string
	for _, rt := range Routes {
		probe := r.Clone(r.Context())
		probe.Method = rt.Method
		if _, pattern := a.mux.Handler(probe); pattern == rt.Method+" "+rt.Path {
			methods = append(methods, rt.Method)
		}
	}
	return strings.Join(methods, ", ")
}

type callerKey struct{}

func (a *API) refusal() string {
	if len(a.tokens) == 0 {
		return "no API token is configured (service.tokens): the control API refuses every call"
	}
	return "a valid token is required: Authorization: Bearer <token> (or X-Crawlspace-Token: <token>)"
}

// caller is the name of the token the request carries, if one is valid.
// Every configured token is compared, in constant time, so the time taken
// says nothing of which one came close.
func (a *API) caller(r *http.Request) (string, bool) {
	presented := r.Header.Get("X-Crawlspace-Token")
	if presented == "" {
		scheme, rest, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if strings.EqualFold(scheme, "Bearer") {
			presented = strings.TrimSpace(rest)
		}
	}
	if presented == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(presented))
	name, found := "", 0
	for _, t := range a.tokens {
		if subtle.ConstantTimeCompare(sum[:], t.sum[:]) == 1 {
			name, found = t.name, 1
		}
	}
	return name, found == 1
}

// serve runs one call and logs it with its caller.
func (a *API) serve(w http.ResponseWriter, r *http.Request, rt Route) {
	caller, _ := r.Context().Value(callerKey{}).(string)
	start := a.o.Now()
	status, body := rt.handle(a, w, r, caller)
	attrs := []any{"caller", caller, "method", r.Method, "path", r.URL.Path, "status", status, "remote", r.RemoteAddr,
		"took", a.o.Now().Sub(start).Round(time.Millisecond).String()}
	if s, ok := body.(summarized); ok {
		attrs = append(attrs, s.summary()...)
	}
	switch {
	case status >= 500:
		a.o.Log.Error("api call failed", append(attrs, "err", body.(apiError).Error)...)
	default:
		a.o.Log.Info("api call", attrs...)
	}
	a.write(w, status, body)
}

func (a *API) write(w http.ResponseWriter, status int, body any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(body); err != nil {
		a.o.Log.Debug("api answer not sent", "err", err)
	}
}

type apiError struct {
	Error string `json:"error"`
}

func errorBody(msg string) apiError { return apiError{Error: msg} }

// failed answers an error of the crawler: an unknown source is the
// caller's, anything else the service's.
func failed(err error) (int, any) {
	if errors.Is(err, provider.ErrNoSource) {
		return http.StatusNotFound, errorBody(err.Error())
	}
	return http.StatusInternalServerError, errorBody(err.Error())
}

// readJSON decodes a request's body into v, strictly: an unknown field or
// trailing data is an error, said in words.
func readJSON(w http.ResponseWriter, r *http.Request, v any) error {
	dec := json.NewDecoder(http.MaxBytesReader(w, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		if errors.Is(err, io.EOF) {
			return errors.New("the body is empty: a JSON object is expected")
		}
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return fmt.Errorf("the body is larger than %d bytes", maxBody)
		}
		return fmt.Errorf("the body is not the JSON object expected: %v", err)
	}
	if dec.More() {
		return errors.New("the body holds more than one JSON value")
	}
	return nil
}

// running says whether a cycle is running.
func (a *API) running() bool {
	r := a.o.Crawler.Current()
	return r != nil && !r.Started.IsZero() && r.Finished.IsZero()
}

func (a *API) status(_ http.ResponseWriter, _ *http.Request, _ string) (int, any) {
	return http.StatusOK, a.o.Status()
}

// CycleRequest names the sources whose discovery a cycle runs; none names
// every source.
type CycleRequest struct {
	Sources []string `json:"sources"`
}

// CycleAnswer says what a cycle request started.
type CycleAnswer struct {
	Sources []string `json:"sources"`
	// Running says a cycle was running: the requested one starts when it
	// ends.
	Running bool `json:"cycle_running"`
}

func (a *API) startCycle(w http.ResponseWriter, r *http.Request, _ string) (int, any) {
	var req CycleRequest
	if r.ContentLength != 0 {
		if err := readJSON(w, r, &req); err != nil {
			return http.StatusBadRequest, errorBody(err.Error())
		}
	}
	if err := a.o.Crawler.DiscoverNow(req.Sources...); err != nil {
		return failed(err)
	}
	ans := CycleAnswer{Sources: req.Sources, Running: a.running()}
	if ans.Sources == nil {
		ans.Sources = []string{}
	}
	a.o.Wake()
	return http.StatusAccepted, ans
}

// PauseAnswer is a source's pause as a call left it.
type PauseAnswer struct {
	Source string    `json:"source"`
	Paused bool      `json:"paused"`
	Since  time.Time `json:"since,omitzero"`
	By     string    `json:"by,omitempty"`
	// WasPaused says, for a resume, whether the source was paused.
	WasPaused *bool `json:"was_paused,omitempty"`
}

func (a *API) pause(_ http.ResponseWriter, r *http.Request, caller string) (int, any) {
	name := r.PathValue("source")
	p, err := a.o.Crawler.PauseSource(name, caller)
	if err != nil {
		return failed(err)
	}
	return http.StatusOK, PauseAnswer{Source: name, Paused: true, Since: p.Since, By: p.By}
}

func (a *API) resume(_ http.ResponseWriter, r *http.Request, _ string) (int, any) {
	name := r.PathValue("source")
	was, err := a.o.Crawler.ResumeSource(name)
	if err != nil {
		return failed(err)
	}
	a.o.Wake()
	return http.StatusOK, PauseAnswer{Source: name, WasPaused: &was}
}

// URLsRequest lists the URLs of a recrawl or delete call.
type URLsRequest struct {
	URLs []string `json:"urls"`
}

// URLsAnswer is each URL's decision, and how many had each.
type URLsAnswer struct {
	URLs    []provider.URLDecision `json:"urls"`
	Queued  int                    `json:"queued"`
	Deleted int                    `json:"deleted"`
	Refused int                    `json:"refused"`
	// Running says whether a cycle was running (it fetches the URLs
	// queued), for a recrawl.
	Running *bool `json:"cycle_running,omitempty"`
}

type summarized interface{ summary() []any }

func (u URLsAnswer) summary() []any {
	return []any{"urls", len(u.URLs), "queued", u.Queued, "deleted", u.Deleted, "refused", u.Refused}
}

func newURLsAnswer(ds []provider.URLDecision) URLsAnswer {
	ans := URLsAnswer{URLs: ds}
	for _, d := range ds {
		switch d.Decision {
		case provider.DecisionQueued:
			ans.Queued++
		case provider.DecisionDeleted:
			ans.Deleted++
		default:
			ans.Refused++
		}
	}
	return ans
}

func readURLs(w http.ResponseWriter, r *http.Request) ([]string, error) {
	var req URLsRequest
	if err := readJSON(w, r, &req); err != nil {
		return nil, err
	}
	switch {
	case len(req.URLs) == 0:
		return nil, errors.New(`"urls" must list at least one URL`)
	case len(req.URLs) > MaxURLs:
		return nil, fmt.Errorf(`"urls" lists %d URLs: at most %d a call`, len(req.URLs), MaxURLs)
	}
	return req.URLs, nil
}

func (a *API) recrawl(w http.ResponseWriter, r *http.Request, _ string) (int, any) {
	urls, err := readURLs(w, r)
	if err != nil {
		return http.StatusBadRequest, errorBody(err.Error())
	}
	ds, err := a.o.Crawler.Recrawl(urls)
	if err != nil {
		return failed(err)
	}
	ans := newURLsAnswer(ds)
	running := a.running()
	ans.Running = &running
	if ans.Queued > 0 {
		a.o.Wake()
	}
	return http.StatusOK, ans
}

func (a *API) remove(w http.ResponseWriter, r *http.Request, _ string) (int, any) {
	urls, err := readURLs(w, r)
	if err != nil {
		return http.StatusBadRequest, errorBody(err.Error())
	}
	ds, err := a.o.Crawler.Remove(r.Context(), urls)
	if err != nil {
		return failed(err)
	}
	return http.StatusOK, newURLsAnswer(ds)
}

// ConfirmAnswer says how many held deletes a confirmation sent.
type ConfirmAnswer struct {
	Source string `json:"source"`
	Sent   int    `json:"sent"`
}

func (a ConfirmAnswer) summary() []any { return []any{"source", a.Source, "sent", a.Sent} }

// confirmDeletes sends the deletes the source's guard holds, within the
// request's time: the call waits for them to land, as the command does.
func (a *API) confirmDeletes(_ http.ResponseWriter, r *http.Request, _ string) (int, any) {
	name := r.PathValue("source")
	n, err := a.o.Crawler.ConfirmDeletes(r.Context(), name)
	if err != nil {
		return failed(err)
	}
	return http.StatusOK, ConfirmAnswer{Source: name, Sent: n}
}
