package fetch

import (
	"context"
	"html"
	"net/http"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/render"
	"github.com/crawlspace/crawlspace/rules"
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
		Do: s.browserRequest,
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
