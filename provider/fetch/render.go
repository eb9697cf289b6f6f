package fetch

import (
	"context"
	"fmt"
	"html"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/render"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Rendered is what the browser did with a page, for its record.
type Rendered struct {
	*render.Result
	// Rule is the config entry that asked for the rendering.
	Rule string
	Wait string
}

// rendersPage says how the response to a page request is rendered, nil
// when it is read as fetched: only a whole HTML page, and only when the
// source or a crawl rule asks for it. Not-modified answers, redirects and
// errors are never rendered, so an unchanged page costs its conditional
// GET and nothing more.
func (s *Source) rendersPage(res *Response) *rules.Render {
	if s.browser == nil || res.Err != nil || res.Status != http.StatusOK || res.TooLarge || res.Skip.Reason != "" {
		return nil
	}
	switch docfields.MediaType(res.Header.Get("Content-Type")) {
	case "text/html", "application/xhtml+xml":
	default:
		return nil
	}
	return s.rules.Render(res.URL)
}

// render replaces the fetched page with the DOM the browser built from it.
// A render that fails leaves the page failed (Err, a *render.Error), so it
// is tried again after the usual backoff, never at once.
func (s *Source) render(ctx context.Context, res *Response, r *rules.Render) {
	out, err := s.browser.Render(ctx, render.Request{
		URL: res.URL, Header: res.Header, Body: res.Body,
		Wait: render.Wait(r.Wait), Selector: r.Selector, Timeout: r.Timeout,
		Do: s.pageRequests(res.URL).do,
	})
	if err != nil {
		res.Body, res.Err = nil, err
		return
	}
	body := out.HTML
	// Where a script sent the tab is a link of the page, as a redirect's
	// Location is: the crawl space judges it like any other.
	for _, u := range out.Navigations {
		body = append(body, `<a href="`+html.EscapeString(u)+`"></a>`...)
	}
	out.HTML = nil
	if int64(len(body)) > s.maxBody {
		res.Body, res.TooLarge = nil, true
		return
	}
	h := res.Header.Clone()
	// The DOM is serialized in UTF-8, whatever the page was sent in.
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Del("Content-Length")
	res.Header, res.Body = h, body
	res.Rendered = &Rendered{Result: out, Rule: r.Rule, Wait: r.Wait}
}

// RefusedError is a request of a rendered page that the crawl space or
// robots.txt keeps from leaving: nothing was sent.
type RefusedError struct {
	Reason string
	// Rule is the config entry, or the robots.txt line, that decided.
	Rule string
}

func (e *RefusedError) Error() string {
	if e.Rule == "" {
		return "refused: " + e.Reason
	}
	return "refused: " + e.Reason + " (" + e.Rule + ")"
}

// pageRequests makes the requests of one page being rendered: each judged
// (rules.DecideRequest, then robots.txt), and those to one host made one
// at a time, the host's delay apart, as the crawl's own requests are.
type pageRequests struct {
	s     *Source
	page  string
	mu    sync.Mutex
	hosts map[string]*hostTurn
}

// hostTurn holds a page's turn at one host.
type hostTurn struct {
	turn chan struct{}
	// last is when the previous request to the host ended.
	last time.Time
}

func (s *Source) pageRequests(page string) *pageRequests {
	pr := &pageRequests{s: s, page: page, hosts: map[string]*hostTurn{}}
	// The page itself was just fetched: its host's delay counts from now.
	pr.hosts[urlnorm.Origin(page)] = &hostTurn{turn: make(chan struct{}, 1), last: s.now()}
	return pr
}

func (pr *pageRequests) do(ctx context.Context, req *http.Request) (*http.Response, error) {
	s := pr.s
	// Judged as the browser asks for it, like any URL as found.
	u, err := urlnorm.Found(req.URL.String())
	if err != nil {
		return nil, &RefusedError{Reason: string(rules.ReasonInvalid), Rule: err.Error()}
	}
	if d := s.rules.DecideRequest(u, pr.page); !d.Crawl {
		return nil, &RefusedError{Reason: string(d.Reason), Rule: d.Rule}
	}
	if s.robotsAllow != nil {
		allowed, line, err := s.robotsAllow(ctx, req.URL)
		if err != nil {
			return nil, err
		}
		if !allowed {
			return nil, robotsRefusal(req.URL, line)
		}
	}
	host := urlnorm.Origin(u)
	h, err := pr.take(ctx, host)
	if err != nil {
		return nil, err
	}
	res, err := s.browserRequest(ctx, req)
	if err != nil {
		pr.give(h)
		return nil, err
	}
	res.Body = &turnBody{ReadCloser: res.Body, done: func() { pr.give(h) }}
	return res, nil
}

// take waits for the page's turn at host: its previous request to the
// host ended, and the host's delay has passed since.
func (pr *pageRequests) take(ctx context.Context, host string) (*hostTurn, error) {
	pr.mu.Lock()
	h := pr.hosts[host]
	if h == nil {
		h = &hostTurn{turn: make(chan struct{}, 1)}
		pr.hosts[host] = h
	}
	pr.mu.Unlock()
	select {
	case h.turn <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	var delay time.Duration
	if pr.s.delay != nil {
		delay = pr.s.delay(host)
	}
	if wait := h.last.Add(delay).Sub(pr.s.now()); wait > 0 {
		t := time.NewTimer(wait)
		defer t.Stop()
		select {
		case <-t.C:
		case <-ctx.Done():
			<-h.turn
			return nil, ctx.Err()
		}
	}
	return h, nil
}

// give ends the page's request to h's host.
func (pr *pageRequests) give(h *hostTurn) {
	h.last = pr.s.now()
	<-h.turn
}

// turnBody ends a request's turn at its host once its body is read and
// closed.
type turnBody struct {
	io.ReadCloser
	once sync.Once
	done func()
}

func (b *turnBody) Close() error {
	err := b.ReadCloser.Close()
	b.once.Do(b.done)
	return err
}

// robotsRefusal is the error of a request robots.txt disallows.
func robotsRefusal(u *url.URL, line string) error {
	return &RefusedError{Reason: string(rules.ReasonRobots), Rule: fmt.Sprintf("%s://%s/%s", u.Scheme, u.Host, line)}
}

// browserRequest makes a request of a page being rendered through the
// source's own client: the address rules at dial time, the TLS settings
// and proxy, the credentials and custom headers (to the source's own
// hosts only), the sign-in session, the body limit. A redirect goes back
// to the browser, whose next request comes here again.
func (s *Source) browserRequest(ctx context.Context, req *http.Request) (*http.Response, error) {
	s.setHeaders(req.Header, req.URL.String())
	if f := s.formFor(req.URL.String()); f != nil {
		if _, err := f.session(ctx); err != nil {
			return nil, err
		}
	}
	return s.sub.Do(req.WithContext(withBodyLimit(ctx, s.maxBody)))
}
