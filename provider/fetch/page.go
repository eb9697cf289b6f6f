package fetch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/gocolly/colly/v2"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/rules"
)

// Response is what a page request came back with.
type Response struct {
	URL    string
	Status int // 0 when no response came: Err says why
	Header http.Header
	// Body is downloaded for a 200 only, as sent but for its
	// Content-Encoding: the character decoding is the extractor's, from
	// the bytes and every declaration.
	Body []byte
	// Skip is the crawl space's refusal of the Content-Type, decided
	// before the body was downloaded; its Reason is empty when there was
	// none.
	Skip rules.Decision
	// TooLarge says the body went past fetch.max_body_bytes (an HTML
	// page) or fetch.max_document_bytes (anything else) once decoded; none
	// of it is kept.
	TooLarge bool
	Err      error
	// Rendered is set when Body is the DOM the browser built from the
	// page, nil when it is the page as fetched.
	Rendered *Rendered
}

// newCollector builds the colly collector of one source, which each page
// request clones (pageFetch). Redirects are not followed: each 3xx is
// recorded and its target queued as a URL of its own, so every hop passes
// the crawl space and robots.txt, keeps its own state and is fetched at
// most once.
func newCollector(cfg *config.Config, tr http.RoundTripper) *colly.Collector {
	coll := colly.NewCollector(
		colly.UserAgent(cfg.UserAgent),
		// The frontier deduplicates; colly's visited set would only grow.
		colly.AllowURLRevisit(),
		// Every status reaches OnResponse, so errors are classified in one place.
		colly.ParseHTTPErrorResponse(),
		// One more byte than allowed tells an over-size body from one that
		// fits exactly; the transport counts the limit in decoded bytes
		// and leaves colly nothing to decompress.
		colly.MaxBodySize(int(maxRead(cfg))),
	)
	coll.WithTransport(tr)
	// Source.page sets fetch.timeout on each request's context; zero
	// here, for colly's default is ten seconds.
	coll.SetRequestTimeout(0)
	coll.SetRedirectHandler(func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse })
	return coll
}

// maxRead is how much of a page body is read: one more byte than allowed
// tells an over-size body from one that fits exactly.
func maxRead(cfg *config.Config) int64 {
	return max(cfg.Fetch.MaxBodyBytes, cfg.Fetch.MaxDocumentBytes) + 1
}

// pageFetch is a clone of the source's collector whose callbacks fill res,
// the response of the one request it makes at a time: the clones share
// the collector's transport, so a pool of them costs a few callbacks, and
// each request's result has a typed home instead of colly's context.
type pageFetch struct {
	coll *colly.Collector
	res  *Response
}

func (s *Source) newPageFetch() *pageFetch {
	pf := &pageFetch{coll: s.coll.Clone()}
	pf.coll.OnResponseHeaders(func(r *colly.Response) {
		pf.res.Status = r.StatusCode
		pf.res.Header = r.Headers.Clone()
		// colly converts a body whose Content-Type names a charset,
		// trusting the label whatever the bytes say, and offers no setting
		// to stop it (DetectCharset is for unlabelled bodies): the
		// extractor decides the encoding once, from the bytes and every
		// declaration, so colly is left a header without the type. The
		// map is the one colly reads after the body; the copy above is
		// the response's.
		r.Headers.Del("Content-Type")
		if !s.readsBody(pf.res) {
			r.Request.Abort()
		}
	})
	pf.coll.OnResponse(func(r *colly.Response) { pf.res.Body = r.Body })
	pf.coll.OnError(func(_ *colly.Response, err error) {
		if pf.res.Err == nil && !errors.Is(err, colly.ErrAbortedAfterHeaders) {
			pf.res.Err = err
		}
	})
	return pf
}

// readsBody says whether the body of the answer res holds the status and
// headers of is downloaded.
func (s *Source) readsBody(res *Response) bool {
	if res.Status != http.StatusOK {
		// Redirects, errors and not-modified answers are never indexed: skip their bodies.
		return false
	}
	// A type that said nothing about the body (application/octet-stream)
	// is, by now, the type its first bytes show (Options.Sniff).
	if d := s.rules.DecideMIME(res.Header.Get("Content-Type"), res.URL); !d.Crawl {
		res.Skip = d
		return false
	}
	return true
}

// Page requests a page with the request headers hdr besides the source's
// own, following no redirect; the outcome, a failure included, is in the
// response. ctx ends the request: a stopped crawl hangs up on the pages it
// is fetching instead of waiting out fetch.timeout.
//
// Behind form sign-in, a page whose answer shows the session has ended
// (a redirect to the login page, 401 or 403, the login form) is fetched
// once more after one sign-in; a sign-in that fails is a SignInError in
// Err, and so is a 401 to credentials of any other method.
//
// A page its source or crawl rule says to render is rendered in the
// browser from the bytes fetched (Rendered says how); a render that fails
// is an Err, a *render.Error that Classify reads.
func (s *Source) Page(ctx context.Context, rawURL string, hdr http.Header) *Response {
	res := s.fetchPage(ctx, rawURL, hdr)
	if r := s.rendersPage(res); r != nil {
		s.render(ctx, res, r)
	}
	return res
}

func (s *Source) fetchPage(ctx context.Context, rawURL string, hdr http.Header) *Response {
	f := s.formFor(rawURL)
	if f == nil {
		u, _ := url.Parse(rawURL)
		if err := s.auth.held(u); err != nil {
			return &Response{URL: rawURL, Err: err}
		}
		res := s.page(ctx, rawURL, hdr)
		if res.Err == nil {
			res.Err = s.auth.refused(u, res.Status)
		}
		return res
	}
	gen, err := f.session(ctx)
	if err != nil {
		return &Response{URL: rawURL, Err: err}
	}
	res := s.page(ctx, rawURL, hdr.Clone())
	if !f.signedOut(res) || ctx.Err() != nil {
		return res
	}
	if gen, err = f.renew(ctx, gen); err != nil {
		return &Response{URL: rawURL, Err: err}
	}
	res = s.page(ctx, rawURL, hdr)
	if f.signedOut(res) && ctx.Err() == nil {
		if err := f.lost(gen, rawURL); err != nil {
			return &Response{URL: rawURL, Err: err}
		}
	}
	return res
}

// formFor is the form sign-in a request for rawURL goes through, or nil.
func (s *Source) formFor(rawURL string) *formAuth {
	if s.auth == nil || s.auth.form == nil {
		return nil
	}
	u, err := url.Parse(rawURL)
	if err != nil || !s.auth.covers(u) {
		return nil
	}
	return s.auth.form
}

func (s *Source) page(ctx context.Context, rawURL string, hdr http.Header) *Response {
	s.setHeaders(hdr, rawURL)
	hdr.Set("Accept", s.accept)
	res := &Response{URL: rawURL}
	ctx, cancel := context.WithTimeoutCause(ctx, s.timeout, s.expired)
	defer cancel()
	var err error
	if isConditional(hdr) && plainURL(rawURL) {
		err = s.recheckPage(ctx, res, hdr)
	} else {
		pf := s.pages.Get().(*pageFetch)
		pf.res, pf.coll.Context = res, ctx
		err = pf.coll.Request(http.MethodGet, rawURL, nil, nil, hdr)
		pf.res, pf.coll.Context = nil, nil
		s.pages.Put(pf)
	}
	if res.Err == nil && err != nil && !errors.Is(err, colly.ErrAbortedAfterHeaders) {
		res.Err = err
	}
	var tooLarge *tooLargeError
	if errors.As(res.Err, &tooLarge) {
		// The transport stopped the body at the limit: a 200 whose size the caller judges.
		res.Err, res.TooLarge = nil, true
	}
	return res
}

// timeoutError ends a page request at fetch.timeout: net/http gives the
// cause of the context's end, and a bare "context deadline exceeded" would
// not tell an administrator which limit it was.
type timeoutError time.Duration

func (e timeoutError) Error() string {
	return fmt.Sprintf("fetch.timeout (%s) exceeded", time.Duration(e))
}
func (timeoutError) Timeout() bool { return true }
func (timeoutError) Unwrap() error { return context.DeadlineExceeded }

// recheckPage makes a conditional GET of a page without colly, as colly
// would make it: in a re-crawl most pages answer 304, and for them colly's
// own work (a WHATWG parse and re-serialisation of the URL, its request
// and response objects, its callbacks) was a tenth of the crawler's CPU.
// The request goes through the same transport, with the same headers,
// timeout, redirect policy and cookie jar; a 200 is read as colly reads
// it. The outcome is in res, or in the error returned.
func (s *Source) recheckPage(ctx context.Context, res *Response, hdr http.Header) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, res.URL, nil)
	if err != nil {
		return err
	}
	req.Header = hdr
	r, err := s.recheck.Do(req)
	if err != nil {
		return err
	}
	// Closed unread, a body that is not downloaded ends the download, as
	// it does in colly; a 304 has none, so its connection is kept.
	defer r.Body.Close()
	res.Status, res.Header = r.StatusCode, r.Header
	if !s.readsBody(res) {
		return nil
	}
	res.Body, err = io.ReadAll(io.LimitReader(r.Body, s.maxRead))
	return err
}

// isConditional says whether hdr makes a request conditional.
func isConditional(hdr http.Header) bool {
	return hdr.Get("If-None-Match") != "" || hdr.Get("If-Modified-Since") != ""
}

// plainURL says whether colly would request rawURL, a normalized URL,
// exactly as net/http does: made only of bytes that neither its WHATWG
// parser nor net/url escapes or rewrites (the WHATWG parser escapes, for
// one, an apostrophe in a query, which net/url leaves), so a recheck of it
// reaches the server as the crawl's first request did. Others go through
// colly.
func plainURL(rawURL string) bool {
	for i := 0; i < len(rawURL); i++ {
		if !plainByte[rawURL[i]] {
			return false
		}
	}
	return true
}

var plainByte = func() (t [256]bool) {
	for _, c := range []byte("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-._~/?=&%:;,+@!$*()[]") {
		t[c] = true
	}
	return t
}()
