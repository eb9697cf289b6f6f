package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"net/url"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdpfetch "github.com/chromedp/cdproto/fetch"
	"github.com/chromedp/cdproto/inspector"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
)

// Wait is what a render waits for before it takes the DOM.
type Wait string

const (
	// WaitLoad waits for the load event.
	WaitLoad Wait = "load"
	// WaitNetworkIdle waits, after the load event, until no request of the
	// page has been in flight for IdleTime.
	WaitNetworkIdle Wait = "network_idle"
	// WaitElement waits until Selector matches an element.
	WaitElement Wait = "element"
)

// IdleTime is how long the network must stay quiet for WaitNetworkIdle.
const IdleTime = 500 * time.Millisecond

// Request is one page to render.
type Request struct {
	// URL is the page's address; Header and Body are the response the
	// crawler fetched for it, given to the browser as that URL's answer.
	URL    string
	Header http.Header
	Body   []byte
	// Wait, Selector (for WaitElement) and Timeout: the render takes the
	// DOM once the wait is over, or when Timeout has passed since the page
	// was opened, whichever comes first.
	Wait     Wait
	Selector string
	Timeout  time.Duration
	// Do makes a request of the page (a script, a fetch() call, a
	// stylesheet, a frame) on the crawler's side. It does not follow
	// redirects: a 3xx goes back to the browser, whose next request comes
	// through Do again. An error fails that request in the page.
	Do func(ctx context.Context, req *http.Request) (*http.Response, error)
}

// Result is the DOM a page's scripts built, and what happened on the way.
type Result struct {
	// HTML is the serialized DOM, doctype included, in UTF-8.
	HTML []byte
	// Navigations are the URLs the page's scripts tried to take the tab to
	// (location.href = ...): never followed in the tab,
	// they are links of the page.
	Navigations []string
	// WaitMet is false when Timeout ended the wait: the DOM is as it was then.
	WaitMet bool
	// Requests counts the requests made for the page through Request.Do;
	// Blocked those refused by type (images, fonts, media, beacons,
	// WebSockets, event streams, other schemes); Failed those Do failed,
	// the network rules' refusals among them.
	Requests, Blocked, Failed int
	// FirstFailure is the first error of Do, for the record.
	FirstFailure string
	// ScriptErrors counts uncaught exceptions; FirstScriptError is the first.
	ScriptErrors     int
	FirstScriptError string
	// Dialogs counts the alert, confirm and prompt dialogs the page
	// opened, each dismissed at once; FirstDialog is the first, its kind
	// and message.
	Dialogs     int
	FirstDialog string
	// Retried is why the page was rendered a second time in a fresh
	// browser, "" when once was enough.
	Retried string
	// Took is the time from opening the tab to taking the DOM.
	Took time.Duration
}

// Error is a render that failed, after its one retry when the failure was
// the browser's.
type Error struct {
	// Reason is render_failed (the browser crashed or hung twice, or the
	// page could not be opened) or browser_unavailable (Chromium would not
	// start).
	Reason string
	Err    error
}

func (e *Error) Error() string { return e.Reason + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// blocked are the resource types a render never asks for: nothing of them
// reaches the DOM's text or links, and they are most of a page's bytes.
// WebSockets and event streams are live channels that would keep the
// network busy forever; beacons and reports only tell the site about us.
var blocked = map[network.ResourceType]bool{
	network.ResourceTypeImage: true, network.ResourceTypeMedia: true, network.ResourceTypeFont: true,
	network.ResourceTypeTextTrack: true, network.ResourceTypeManifest: true, network.ResourceTypePing: true,
	network.ResourceTypeCSPViolationReport: true, network.ResourceTypeEventSource: true,
	network.ResourceTypeWebSocket: true, network.ResourceTypePrefetch: true, network.ResourceTypeFedCM: true,
	network.ResourceTypeSignedExchange: true,
}

// Render renders one page, in one of the pool's tabs. A failure of the
// browser (a crash, a hang) restarts it and renders the page once more;
// the Result says why. ctx ends the render at once.
func (b *Browser) Render(ctx context.Context, req Request) (*Result, error) {
	select {
	case b.tabs <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-b.tabs }()
	res, gen, err := b.once(ctx, req)
	if err == nil || ctx.Err() != nil {
		return res, err
	}
	var unavailable *Error
	if errors.As(err, &unavailable) {
		return nil, err
	}
	why := err.Error()
	b.retire(gen, true, why)
	res, gen, err = b.once(ctx, req)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.As(err, &unavailable) {
			return nil, err
		}
		// The next page gets a fresh browser too.
		b.retire(gen, true, err.Error())
		return nil, &Error{Reason: "render_failed", Err: fmt.Errorf("%w; the first attempt: %s", err, why)}
	}
	res.Retried = why
	return res, nil
}

// once renders the page in the current browser; gen names that browser,
// for a retry to retire it.
func (b *Browser) once(ctx context.Context, req Request) (*Result, int, error) {
	in, err := b.acquire()
	if err != nil {
		return nil, 0, &Error{Reason: "browser_unavailable", Err: err}
	}
	defer in.release()
	in.rendering.Add(1)
	res, err := renderTab(ctx, in, req)
	in.rendering.Add(-1)
	if err == nil {
		b.checkMemory(in)
	} else if why := in.killedFor(); why != "" && ctx.Err() == nil {
		// The page saw the browser die; the cause is the bound.
		err = errors.New(why)
	}
	return res, in.gen, err
}

// tab is the state of one page's render.
type tab struct {
	req      Request
	mainURL  string
	res      Result
	mu       sync.Mutex
	served   bool // the page's own document was handed to the browser
	inflight atomic.Int64
	lastBusy atomic.Int64 // unix nanos of the last request's start or end
	now      func() time.Time
}

func renderTab(ctx context.Context, in *instance, req Request) (res *Result, err error) {
	start := in.now()
	tc, err := in.takeTab(ctx)
	if err != nil {
		return nil, browserErr(ctx, "opening a tab", err)
	}
	defer func() {
		if err == nil {
			err = in.putTab(ctx, tc)
		} else {
			tc.cancel()
		}
	}()
	// The page ends with ctx or at the hard deadline: a browser that does
	// not answer by then hangs.
	hard, hardCancel := context.WithTimeout(tc.ctx, req.Timeout+in.grace)
	defer hardCancel()
	stopOnCtx := context.AfterFunc(ctx, hardCancel)
	defer stopOnCtx()

	t := &tab{req: req, mainURL: stripFragment(req.URL), now: in.now}
	t.lastBusy.Store(t.now().UnixNano())

	loads := chromedp.Events(hard, page.LoadEventFired)
	crashes := chromedp.Events(hard, inspector.TargetCrashed)
	exceptions := chromedp.Events(hard, runtime.ExceptionThrown)
	var wg sync.WaitGroup
	defer wg.Wait()
	defer hardCancel()
	tc.serveWith(func(ev cdpfetch.EventRequestPaused) {
		k := t.classify(hard, ev)
		wg.Go(func() { t.serve(hard, ev, k) })
	}, t.dialog)
	// Cleared before wg.Wait, so no request is added to wg while it waits.
	defer tc.serveWith(nil, nil)
	wg.Go(func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			t.mu.Lock()
			if t.res.ScriptErrors++; t.res.FirstScriptError == "" && ev.ExceptionDetails != nil {
				t.res.FirstScriptError = exceptionText(ev.ExceptionDetails)
			}
			t.mu.Unlock()
		}
	})
	loaded := make(chan struct{})
	wg.Go(func() {
		for _, err := range loads {
			if err != nil {
				return
			}
			// A load before the page's document was handed over is the
			// blank page's.
			t.mu.Lock()
			served := t.served
			t.mu.Unlock()
			if served {
				close(loaded)
				return
			}
		}
	})
	crashed := make(chan struct{})
	wg.Go(func() {
		for _, err := range crashes {
			if err == nil {
				close(crashed)
			}
			return
		}
	})

	nav, err := chromedp.Call(hard, page.Navigate, page.NavigateParams{URL: req.URL})
	if err != nil {
		return nil, browserErr(ctx, "opening the page", err)
	}
	if nav.ErrorText != "" {
		return nil, &Error{Reason: "render_failed", Err: fmt.Errorf("opening the page: %s", nav.ErrorText)}
	}

	met, err := t.wait(hard, req.Timeout-t.now().Sub(start), loaded, crashed)
	if err != nil {
		return nil, browserErr(ctx, "waiting", err)
	}
	html, err := chromedp.Run(hard, chromedp.Evaluate[string](serializeDOM))
	if err != nil {
		return nil, browserErr(ctx, "taking the DOM", err)
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	out := t.res
	out.HTML, out.WaitMet, out.Took = []byte(html), met, t.now().Sub(start)
	return &out, nil
}

// pageTab is a tab of the browser, kept between pages: opening one costs
// a renderer process, most of a small page's render.
type pageTab struct {
	ctx    context.Context
	cancel context.CancelFunc

	mu   sync.Mutex
	page func(cdpfetch.EventRequestPaused) // nil between pages
	// dialog notes a dialog of the page being rendered; nil between pages.
	dialog func(*page.EventJavascriptDialogOpening)
}

// serveWith makes serve the handler of the tab's intercepted requests
// (nil fails them) and dialog the page's note of each dialog.
func (tc *pageTab) serveWith(serve func(cdpfetch.EventRequestPaused), dialog func(*page.EventJavascriptDialogOpening)) {
	tc.mu.Lock()
	tc.page, tc.dialog = serve, dialog
	tc.mu.Unlock()
}

// dismissDialogs answers every dialog the tab opens, for its whole life:
// a dialog stops the page's scripts until someone answers it, and nobody
// is there. alert, confirm and prompt are dismissed (confirm answers
// false, prompt null: a script asking leave to do something is told no);
// a page asking to be kept open (beforeunload) is left, as the crawler
// leaves every page.
func (tc *pageTab) dismissDialogs(dialogs iter.Seq2[page.EventJavascriptDialogOpening, error], grace time.Duration) {
	for ev, err := range dialogs {
		if err != nil {
			return
		}
		tc.mu.Lock()
		if tc.dialog != nil && ev.Type != page.DialogTypeBeforeunload {
			tc.dialog(&ev)
		}
		tc.mu.Unlock()
		// Answered from its own goroutine: the events of the tab wait
		// while this loop does.
		go func() {
			ctx, cancel := context.WithTimeout(tc.ctx, grace)
			defer cancel()
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: ev.Type == page.DialogTypeBeforeunload})
		}()
	}
}

// dispatch hands each request the tab intercepts to the page being
// rendered, for the tab's whole life: a request a page's scripts made as
// its render ended is failed, not left paused in the browser with nobody
// to answer it.
func (tc *pageTab) dispatch(paused iter.Seq2[cdpfetch.EventRequestPaused, error], grace time.Duration) {
	for ev, err := range paused {
		if err != nil {
			return
		}
		tc.mu.Lock()
		if tc.page != nil {
			tc.page(ev)
			tc.mu.Unlock()
			continue
		}
		tc.mu.Unlock()
		fctx, cancel := context.WithTimeout(tc.ctx, grace)
		failPaused(fctx, ev, network.ErrorReasonAborted)
		cancel()
	}
}

// takeTab is an idle tab of the browser, or a new one with every request
// of its pages intercepted.
func (in *instance) takeTab(ctx context.Context) (*pageTab, error) {
	select {
	case tc := <-in.idle:
		return tc, nil
	default:
	}
	tctx, cancel := chromedp.NewContext(in.ctx)
	// The tab lives as long as the context of its first command, so that
	// one gets no deadline: the wait for it is bounded here instead.
	opened := make(chan error, 1)
	go func() { opened <- chromedp.Do(tctx) }()
	timer := time.NewTimer(in.grace)
	defer timer.Stop()
	select {
	case err := <-opened:
		if err != nil {
			cancel()
			return nil, err
		}
	case <-timer.C:
		cancel()
		return nil, context.DeadlineExceeded
	case <-ctx.Done():
		cancel()
		return nil, ctx.Err()
	}
	open, openCancel := context.WithTimeout(tctx, in.grace)
	defer openCancel()
	stop := context.AfterFunc(ctx, openCancel)
	defer stop()
	// The new tab's own first load is waited out, so that the next load
	// event is the page's.
	if err := chromedp.Do(open, chromedp.Navigate("about:blank")); err != nil {
		cancel()
		return nil, err
	}
	tc := &pageTab{ctx: tctx, cancel: cancel}
	go tc.dispatch(chromedp.Events(tctx, cdpfetch.RequestPaused), in.grace)
	go tc.dismissDialogs(chromedp.Events(tctx, page.JavascriptDialogOpening), in.grace)
	if _, err := chromedp.Call(open, cdpfetch.Enable, cdpfetch.EnableParams{Patterns: []*cdpfetch.RequestPattern{{URLPattern: "*"}}}); err != nil {
		cancel()
		return nil, err
	}
	return tc, nil
}

// putTab leaves a tab on a blank page, its page's scripts and requests
// ended, for the next page; a tab that cannot get there is closed, and
// the failure is the browser's.
func (in *instance) putTab(ctx context.Context, tc *pageTab) error {
	blank, cancel := context.WithTimeout(tc.ctx, in.grace)
	defer cancel()
	stop := context.AfterFunc(ctx, cancel)
	defer stop()
	// The page itself goes to the blank page: a navigation it starts stays
	// in its renderer, so its document, scripts and timers end when the
	// blank page commits. One the tab is sent to from outside may move to
	// another renderer and leave the page running there for a while, its
	// timers still firing requests into the tab.
	navigated := chromedp.Events(blank, page.FrameNavigated)
	res, err := chromedp.Call(blank, runtime.Evaluate, runtime.EvaluateParams{Expression: `location.replace("about:blank")`})
	if err == nil && res.ExceptionDetails != nil {
		err = errors.New(exceptionText(res.ExceptionDetails))
	}
	if err == nil {
		err = blankCommitted(navigated)
	}
	if err != nil {
		tc.cancel()
		return browserErr(ctx, "leaving the page", err)
	}
	select {
	case in.idle <- tc:
	default:
		tc.cancel()
	}
	return nil
}

// blankCommitted waits until the tab's main frame shows the blank page.
func blankCommitted(navigated iter.Seq2[page.EventFrameNavigated, error]) error {
	for ev, err := range navigated {
		if err != nil {
			return err
		}
		if ev.Frame.ParentID == "" && ev.Frame.URL == "about:blank" {
			return nil
		}
	}
	return errors.New("the tab closed before the blank page")
}

// serializeDOM is the page as a document again: doctype and root element.
const serializeDOM = `(document.doctype ? new XMLSerializer().serializeToString(document.doctype) + "\n" : "") + document.documentElement.outerHTML`

// wait waits for the request's condition for up to timeout; met is false
// when the timeout (what is left of the page's) came first, which is no
// error: the DOM is taken as it is. A crashed tab, or ctx ending, is an
// error.
func (t *tab) wait(ctx context.Context, timeout time.Duration, loaded, crashed <-chan struct{}) (met bool, err error) {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	// The browser runs in real time, so the wait is bounded by a real
	// timer whatever the crawler's clock says.
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	isLoaded := false
	for {
		select {
		case <-crashed:
			return false, errors.New("the tab crashed")
		case <-loaded:
			// Quiet counts from the load event: a request the page's
			// scripts started may reach us a moment after it.
			isLoaded, loaded = true, nil
			t.lastBusy.Store(t.now().UnixNano())
		case <-tick.C:
		case <-waitCtx.Done():
			return false, ctx.Err()
		}
		switch t.req.Wait {
		case WaitElement:
			// Between documents the page has no context to evaluate in:
			// an error here is "not yet", and a dead browser ends ctx.
			found, err := chromedp.Run(waitCtx, chromedp.Evaluate[bool](`document.querySelector(`+jsString(t.req.Selector)+`) !== null`))
			if err == nil && found {
				return true, nil
			}
		case WaitNetworkIdle:
			if isLoaded && t.inflight.Load() == 0 && t.now().Sub(time.Unix(0, t.lastBusy.Load())) >= IdleTime {
				return true, nil
			}
		default:
			if isLoaded {
				return true, nil
			}
		}
	}
}

// kind is what a paused request is to the page.
type kind int

const (
	subresource kind = iota
	document         // the page's own, answered with the bytes fetched
	navigation       // a script taking the tab elsewhere
	stale            // the previous page's
)

// classify tells what a paused request is to the page. It is called in
// the order the browser reported the requests, which the goroutines that
// serve them do not keep: that order is what tells a stale request.
func (t *tab) classify(ctx context.Context, ev cdpfetch.EventRequestPaused) kind {
	mainDoc := ev.ResourceType == network.ResourceTypeDocument && isMainFrame(ctx, ev.FrameID)
	t.mu.Lock()
	defer t.mu.Unlock()
	switch {
	case mainDoc && !t.served && stripFragment(ev.Request.URL) == t.mainURL:
		t.served = true
		return document
	case !t.served:
		// Nothing of the page asks before its document: this is the
		// previous page's, made as the tab left it and reported by the
		// browser late. It is not made, nor counted.
		return stale
	case mainDoc:
		// The target is a link of the page, like a redirect's Location,
		// and the DOM stays the page's own.
		t.res.Navigations = append(t.res.Navigations, ev.Request.URL)
		return navigation
	}
	return subresource
}

// failPaused fails a paused request in the browser.
func failPaused(ctx context.Context, ev cdpfetch.EventRequestPaused, reason network.ErrorReason) {
	_, _ = chromedp.Call(ctx, cdpfetch.FailRequest, cdpfetch.FailRequestParams{RequestID: ev.RequestID, ErrorReason: reason})
}

// serve answers one paused request of the page.
func (t *tab) serve(ctx context.Context, ev cdpfetch.EventRequestPaused, k kind) {
	r := ev.Request
	fail := func(reason network.ErrorReason) { failPaused(ctx, ev, reason) }
	switch k {
	case stale, navigation:
		fail(network.ErrorReasonAborted)
		return
	case document:
		_, _ = chromedp.Call(ctx, cdpfetch.FulfillRequest, cdpfetch.FulfillRequestParams{
			RequestID: ev.RequestID, ResponseCode: http.StatusOK,
			ResponseHeaders: headerEntries(t.req.Header), Body: t.req.Body,
		})
		return
	}
	if blocked[ev.ResourceType] || isFavicon(ev) || !(strings.HasPrefix(r.URL, "http://") || strings.HasPrefix(r.URL, "https://")) {
		t.count(func(res *Result) { res.Blocked++ })
		fail(network.ErrorReasonBlockedByClient)
		return
	}
	t.busy(1)
	defer t.busy(-1)
	t.count(func(res *Result) { res.Requests++ })
	hreq, err := http.NewRequestWithContext(ctx, r.Method, r.URL, nil)
	if err == nil && !readOnly(r) {
		// A crawler reads and changes nothing: a script's POST, PUT, DELETE
		// or PATCH (a form, fetch(), XHR) is never sent, whatever its host.
		err = fmt.Errorf("%w: %s", ErrMethodRefused, r.Method)
	}
	if err == nil {
		for k, v := range r.Headers {
			if s, ok := v.(string); ok && !hopHeader[http.CanonicalHeaderKey(k)] {
				hreq.Header.Set(k, s)
			}
		}
		var resp *http.Response
		if resp, err = t.req.Do(ctx, hreq); err == nil {
			var data []byte
			data, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				_, _ = chromedp.Call(ctx, cdpfetch.FulfillRequest, cdpfetch.FulfillRequestParams{
					RequestID: ev.RequestID, ResponseCode: int64(resp.StatusCode),
					ResponseHeaders: headerEntries(resp.Header), Body: data,
				})
				return
			}
		}
	}
	t.count(func(res *Result) {
		if res.Failed++; res.FirstFailure == "" {
			res.FirstFailure = r.URL + ": " + err.Error()
		}
	})
	fail(network.ErrorReasonFailed)
}

func (t *tab) count(f func(*Result)) {
	t.mu.Lock()
	f(&t.res)
	t.mu.Unlock()
}

func (t *tab) busy(d int64) {
	t.inflight.Add(d)
	t.lastBusy.Store(t.now().UnixNano())
}

// safeMethod are the methods a page's requests may use: they read.
var safeMethod = map[string]bool{http.MethodGet: true, http.MethodHead: true}

// readOnly says whether a page's request only reads: a GET or a HEAD, or
// the CORS preflight (OPTIONS) the browser sends before a GET or HEAD to
// another origin with headers of its own, which the site answers without
// acting. A preflight for any other method is refused with it.
func readOnly(r *network.Request) bool {
	if r.Method == http.MethodOptions {
		m, _ := header(r.Headers, "Access-Control-Request-Method").(string)
		return safeMethod[m]
	}
	return safeMethod[r.Method]
}

// header is the value of the request header name, whatever its case.
func header(h network.Headers, name string) any {
	for k, v := range h {
		if strings.EqualFold(k, name) {
			return v
		}
	}
	return nil
}

// ErrMethodRefused is the cause of a page's request that would change
// something on a site: only GET and HEAD are made.
var ErrMethodRefused = errors.New("refused: a crawler sends only GET and HEAD")

// dialog notes one dialog of the page.
func (t *tab) dialog(ev *page.EventJavascriptDialogOpening) {
	t.count(func(res *Result) {
		if res.Dialogs++; res.FirstDialog == "" {
			res.FirstDialog = fmt.Sprintf("%s %q", ev.Type, ev.Message)
		}
	})
}

// hopHeader are request and response headers that describe one
// connection or one encoding of the body, not the resource: the crawler's
// client sets its own, and a fulfilled response's body is already decoded.
var hopHeader = map[string]bool{
	"Host": true, "Connection": true, "Content-Length": true, "Transfer-Encoding": true,
	"Content-Encoding": true, "Accept-Encoding": true, "Keep-Alive": true, "Upgrade": true,
	"Proxy-Connection": true, "Te": true, "Trailer": true,
}

func headerEntries(h http.Header) []*cdpfetch.HeaderEntry {
	var out []*cdpfetch.HeaderEntry
	for k, vs := range h {
		if hopHeader[http.CanonicalHeaderKey(k)] {
			continue
		}
		for _, v := range vs {
			out = append(out, &cdpfetch.HeaderEntry{Name: k, Value: v})
		}
	}
	return out
}

// isMainFrame says whether the frame is the tab's top frame, whose id is
// the target's.
func isMainFrame(ctx context.Context, id cdp.FrameID) bool {
	c := chromedp.FromContext(ctx)
	return c != nil && c.Target != nil && string(c.Target.TargetID) == string(id)
}

// isFavicon tells the browser's own request for the site's icon, typed
// Other rather than Image.
func isFavicon(ev cdpfetch.EventRequestPaused) bool {
	if ev.ResourceType != network.ResourceTypeOther {
		return false
	}
	u, err := url.Parse(ev.Request.URL)
	return err == nil && u.Path == "/favicon.ico"
}

func stripFragment(u string) string {
	if i := strings.IndexByte(u, '#'); i >= 0 {
		return u[:i]
	}
	return u
}

func exceptionText(d *runtime.ExceptionDetails) string {
	if d.Exception != nil && d.Exception.Description != "" {
		s, _, _ := strings.Cut(d.Exception.Description, "\n")
		return s
	}
	return d.Text
}

func jsString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x2028 || r == 0x2029:
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// browserErr is a failure of the browser during a render: the caller's
// own end when ctx ended, else the reason to restart the browser, with the
// process's exit status when it died.
func browserErr(ctx context.Context, step string, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return fmt.Errorf("%s: the browser died (%s)", step, exit.ProcessState)
	}
	if errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
		return fmt.Errorf("%s: the browser went away or did not answer in time", step)
	}
	return fmt.Errorf("%s: %w", step, err)
}
