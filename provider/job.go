package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/render"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// job is one leased URL on its way through a worker. run decides how it
// ends, fetching the page when the crawl space and robots.txt allow it;
// finish records that end in the state store, the report and the log.
type job struct {
	c     *Crawler
	lease frontier.Lease
	item  frontier.Item
	// rec is the URL's record as leased: its state reads InFlight, so what
	// the URL holds is told by its bookkeeping (Indexed, Pending, ErrCount).
	rec frontier.Record
	src *source // nil when the URL's source left the config
	d   rules.Decision
	u   *url.URL // the key, parsed
	// request is the URL requested (rules.Source.Request): the URL as
	// found, the query filter applied.
	request string
	// unlockGroup releases the page's group of duplicates once its
	// outcome is stored; nil when it took none.
	unlockGroup func()
}

// endKind is how a job ends.
type endKind uint8

const (
	// released: the URL goes back to the queue unrecorded (the crawl stops,
	// or its host waits its delay after robots.txt was read).
	released endKind = iota
	// removed: the URL's source left the config.
	removed
	// excluded: the crawl space, robots.txt or the response keeps the URL
	// out (reason, detail).
	excluded
	// failed: no response, for good (reason, detail, reach).
	failed
	// temporary: no response worth keeping yet; the URL is tried again
	// after a backoff of its host (reason, detail, status, until,
	// attempts, reach).
	temporary
	// httpError: an error status, for good (status, reason).
	httpError
	// redirect: a 3xx whose target is queued as a URL of its own (status,
	// target, to, route).
	redirect
	// notModified: a 304 to a conditional GET.
	notModified
	// fetched: a 200 read whole (res, mediaType, fetched).
	fetched
	// signInFailed: the source could not authenticate (detail): the URL
	// waits like a temporary error, its document kept.
	signInFailed
	// renderFailed: the page was fetched but the browser could not render
	// it (reason, detail): the crawler's failure, not the site's, so the
	// URL waits like a temporary error and its document is kept.
	renderFailed
)

// reach says whether a failed URL's request reached its host, for its
// history: a refused address or an unavailable robots.txt sends none.
type reach uint8

const (
	reached reach = iota
	unreached
)

// end is how a job ends, with the data its kind needs.
type end struct {
	kind     endKind
	reason   string
	detail   string
	status   int
	reach    reach
	until    time.Time
	attempts int
	// redirect: where it goes (its key, and as found) and what the crawl
	// space makes of it.
	target string
	found  string
	to     *rules.Source
	route  rules.Decision
	// fetched; detail says how the bytes contradicted the Content-Type.
	res       *fetch.Response
	mediaType string
	fetched   time.Time
}

// errFenced ends the work on a lease whose fence is done (frontier.Fenced).
var errFenced = errors.New("the lease's partition may have passed to another process")

// process fetches one leased URL and records its outcome.
func (c *Crawler) process(ctx context.Context, lease frontier.Lease) {
	if f, ok := lease.(frontier.Fenced); ok {
		// A shared store's lease may be taken back: no request for it once
		// its fence is done (run releases the URL when ctx ends).
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		stop := context.AfterFunc(f.Fence(), func() { cancel(errFenced) })
		defer func() { stop(); cancel(nil) }()
	}
	j := &job{c: c, lease: lease, item: lease.Item(), rec: lease.Record()}
	j.src = c.sources[j.item.Source]
	j.finish(j.run(ctx))
}

func (j *job) run(ctx context.Context) end {
	if j.src == nil {
		return end{kind: removed}
	}
	// The crawl space may have changed since the URL was queued: the URL
	// as found and its key are judged again.
	if j.item.FoundAs != "" {
		if d := j.src.rules.Decide(j.item.FoundAs, j.item.Depth); !d.Crawl {
			return end{kind: excluded, reason: string(d.Reason), detail: d.Rule}
		}
	}
	j.d = j.src.rules.Decide(j.item.URL, j.item.Depth)
	if !j.d.Crawl {
		return end{kind: excluded, reason: string(j.d.Reason), detail: j.d.Rule}
	}
	u, err := url.Parse(j.item.URL)
	if err != nil {
		return end{kind: excluded, reason: string(rules.ReasonInvalid), detail: err.Error()}
	}
	j.u = u
	j.request = j.src.rules.Request(j.item.URL, j.item.FoundAs)
	if e, ok := j.robots(ctx); !ok {
		return e
	}

	hdr, conditional := j.conditional()
	start := j.c.now().UTC()
	res := j.src.fetch.Page(ctx, j.request, hdr)
	// A page read whole before the fence was done is kept: its outcome
	// ends the lease, so the next holder does not fetch it again.
	if ctx.Err() != nil && (res.Err != nil || !errors.Is(context.Cause(ctx), errFenced)) {
		return end{kind: released}
	}
	if signIn := (*fetch.SignInError)(nil); errors.As(res.Err, &signIn) {
		return end{kind: signInFailed, reason: "auth_failed", detail: signIn.Error()}
	}
	if renderErr := (*render.Error)(nil); errors.As(res.Err, &renderErr) {
		return end{kind: renderFailed, reason: renderErr.Reason, detail: renderErr.Err.Error()}
	}
	if res.Err != nil {
		return j.failure(res.Err)
	}
	j.c.fetchedPage(j.lease, j.src.cfg.Name, res, j.c.now().Sub(start))
	switch st := res.Status; {
	case st == http.StatusNotModified:
		if !conditional {
			// Exalead: a 304 to an unconditional GET is inconsistent, a permanent error.
			return j.statusError(res, "http_304_unconditional")
		}
		return end{kind: notModified, status: st}
	case st >= 300 && st < 400:
		return j.redirect(res)
	case st != http.StatusOK:
		return j.statusError(res, "")
	}
	mt := docfields.MediaType(res.Header.Get("Content-Type"))
	if res.Skip.Reason != "" {
		return end{kind: excluded, reason: string(res.Skip.Reason), detail: mt}
	}
	limit, key := j.c.cfg.Fetch.MaxBodyBytes, "fetch.max_body_bytes"
	if !docfields.IsPage(mt) {
		limit, key = j.c.cfg.Fetch.MaxDocumentBytes, "fetch.max_document_bytes"
	}
	if res.TooLarge || int64(len(res.Body)) > limit {
		// Never a silently truncated document: the page is left out, with its reason.
		return end{kind: excluded, reason: "too_large", detail: fmt.Sprintf("over %d bytes (%s)", limit, key)}
	}
	read, mismatch := j.src.extractors.readAs(mt, res.Body)
	if read != mt || docfields.Generic(read) {
		// The bytes said what the type did not, or nothing: the crawl space decides on what they are.
		if d := j.src.rules.DecideMIME(read, j.item.URL); !d.Crawl {
			return end{kind: excluded, reason: string(d.Reason), detail: read}
		}
	}
	e := end{kind: fetched, status: res.Status, res: res, mediaType: read, fetched: start}
	if mismatch {
		e.detail = fmt.Sprintf("served as %s, read as %s", mt, read)
	}
	return e
}

// conditional is the request headers of a conditional GET when the URL
// holds a document that can be kept on a 304. A write still pending must
// fetch the page whole, and so must a page whose links were never stored,
// or its links would stay unknown and no orphan could be decided.
func (j *job) conditional() (http.Header, bool) {
	hdr := http.Header{}
	rec := j.rec
	// A forgotten hash asks for the document to be written again
	// (Writes.Refetch): a 304 would not write it.
	if !rec.Indexed || rec.Pending != "" || rec.Hash == "" || !rec.HasLinks || (rec.ETag == "" && rec.LastModified == "" && rec.FetchedAt.IsZero()) {
		return hdr, false
	}
	if rec.ETag != "" {
		hdr.Set("If-None-Match", rec.ETag)
	}
	// The stored Last-Modified, else the last crawl time (seed 002).
	if rec.LastModified != "" {
		hdr.Set("If-Modified-Since", rec.LastModified)
	} else if !rec.FetchedAt.IsZero() {
		hdr.Set("If-Modified-Since", rec.FetchedAt.UTC().Format(http.TimeFormat))
	}
	return hdr, true
}

// robots checks robots.txt for the URL; ok is false when the job ends
// here, as e says: refused by a line, postponed while robots.txt cannot be
// read, or released while the host waits its delay after robots.txt was
// read for this lease.
func (j *job) robots(ctx context.Context) (e end, ok bool) {
	c, src, hostKey := j.c, j.src, j.lease.HostKey()
	if !*src.cfg.Robots.Obey {
		return end{}, true
	}
	r, err := c.robots.Get(ctx, j.u)
	if err == nil {
		c.polite.learnFrom(src.cfg, hostKey, r)
	}
	// robots.txt requested for this lease: the page is a second request
	// and waits the host's delay, queued again rather than holding a worker.
	paused := c.polite.pause(hostKey)
	var unavailable *robots.UnavailableError
	var addrErr *fetch.AddressError
	var signIn *fetch.SignInError
	switch {
	case errors.As(err, &signIn):
		// The source cannot authenticate (a Kerberos login the KDC refused):
		// its robots.txt, like its pages, waits for the next sign-in.
		return end{kind: signInFailed, reason: "auth_failed", detail: signIn.Error(), reach: unreached}, false
	case errors.As(err, &addrErr):
		// The host's address is refused: no robots.txt will make it allowed.
		return j.failure(addrErr), false
	case errors.As(err, &unavailable):
		// RFC 9309: an unreachable robots.txt disallows everything until it
		// can be read. Each postponement is a temporary error of the URL.
		// The host's failed fetches count for every URL of the host: only a
		// URL or two get a turn per retry wait, and once the host has failed
		// max_temporary_errors times its URLs end the cycle in error together
		// instead of one by one, waits of up to 30 minutes apart.
		attempts := max(j.rec.TempErrCount+1, c.polite.robotsFailed(hostKey, unavailable.RetryAt))
		return end{kind: temporary, reason: "robots_unavailable", detail: robotsCause(unavailable),
			until: unavailable.RetryAt, attempts: attempts, reach: unreached}, false
	case err != nil:
		if ctx.Err() != nil {
			return end{kind: released}, false // stopping: the URL stays queued for the next start
		}
		// Nothing else is expected here, but a URL given straight back
		// would be leased again at once: it waits its backoff instead.
		return end{kind: temporary, reason: "robots_unavailable", detail: err.Error(),
			until: c.now().Add(c.timing.backoff(j.rec.TempErrCount)), attempts: j.rec.TempErrCount + 1, reach: unreached}, false
	}
	c.polite.robotsRead(hostKey)
	// RFC 9309 judges the URL the site wrote, and the URL requested when
	// the query filter made another of it.
	for _, u := range []string{j.item.AsFound(), j.request} {
		if allowed, line := r.Test(c.agent, urlnorm.RequestTarget(u)); !allowed {
			return end{kind: excluded, reason: string(rules.ReasonRobots), detail: urlnorm.Origin(u) + "/" + line}, false
		}
	}
	if paused {
		return end{kind: released}, false
	}
	return end{}, true
}

// failure is how a fetch that got no status ends: a network error,
// temporary or for good.
func (j *job) failure(err error) end {
	reason, temp := fetch.Classify(err)
	if temp {
		return end{kind: temporary, reason: reason, detail: errCause(err),
			until: j.c.now().Add(j.c.timing.backoff(j.rec.TempErrCount)), attempts: j.rec.TempErrCount + 1}
	}
	e := end{kind: failed, reason: reason, detail: errCause(err)}
	if addrErr := (*fetch.AddressError)(nil); errors.As(err, &addrErr) {
		e.reach = unreached
	}
	return e
}

// statusError is how an error status ends, under reason or else
// http_<status>. Exalead's classification: 503 with Retry-After and 429
// are temporary (the host backs off); every other status is permanent.
func (j *job) statusError(res *fetch.Response, reason string) end {
	status, h := res.Status, res.Header
	if reason == "" {
		reason = "http_" + strconv.Itoa(status)
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && h.Get("Retry-After") != "" {
		cause := "HTTP " + strconv.Itoa(status) + " " + http.StatusText(status)
		if ra := h.Get("Retry-After"); ra != "" {
			cause += ", Retry-After: " + ra
		}
		now := j.c.now()
		return end{kind: temporary, reason: reason, status: status, detail: cause,
			until: now.Add(j.c.timing.retryAfter(h.Get("Retry-After"), j.rec.TempErrCount, now)), attempts: j.rec.TempErrCount + 1}
	}
	return end{kind: httpError, reason: reason, status: status}
}

// redirect is how a 3xx ends: its target queued as a URL of its own, or a
// permanent error when the target is malformed, the URL itself, or one
// hop too many.
func (j *job) redirect(res *fetch.Response) end {
	loc := res.Header.Get("Location")
	// Relative to the URL requested, as browsers resolve it.
	found, err := urlnorm.Resolve(j.request, loc)
	if loc == "" || err != nil {
		// Exalead: a redirect to a malformed URL is a permanent error.
		return j.statusError(res, "redirect_malformed")
	}
	to, target, d := j.c.rules.Route(found, j.item.Depth, j.src.rules)
	if target == j.item.URL {
		return j.statusError(res, "redirect_loop")
	}
	if j.item.Hops >= j.c.cfg.Fetch.MaxRedirects {
		return j.statusError(res, "too_many_redirects")
	}
	return end{kind: redirect, status: res.Status, target: target, found: found, to: to, route: d}
}

// finish records how the job ended.
func (j *job) finish(e end) {
	switch e.kind {
	case released:
		j.lease.Release()
	case removed:
		// A source removed from the config: its URLs leave the crawl.
		o := frontier.Outcome{State: frontier.Excluded, Reason: "source_removed", NoRequest: true}
		w := unindex(j.rec)
		j.c.complete(completion{lease: j.lease, outcome: o, write: w})
	case excluded:
		j.exclude(e.reason, e.detail)
	case failed:
		j.failed(e)
	case temporary:
		j.temporary(e)
	case httpError:
		j.httpError(e)
	case redirect:
		j.redirected(e)
	case notModified:
		j.c.reportNow().unchanged(j.src.cfg.Name)
		j.c.log.Debug("unchanged", "url", j.item.URL, "source", j.src.cfg.Name, "status", e.status)
		o := frontier.Outcome{State: frontier.Fetched, Status: e.status, ETag: j.rec.ETag,
			LastModified: j.rec.LastModified, Hash: j.rec.Hash}
		in := &knownGroup{}
		if g := j.c.groups(j.src); g != nil {
			// Unchanged, it stays in its group with its claim; settling
			// the group checks that claim still holds.
			var err error
			if gr, ok := g.(frontier.GroupReader); ok {
				o.Content, o.Claim, in.members, err = gr.GroupOf(j.rec)
			} else {
				o.Content, o.Claim, err = g.ContentOf(j.item.URL)
			}
			if err != nil {
				j.c.complete(completion{lease: j.lease, outcome: o})
				break
			}
		}
		in.content = o.Content
		j.c.complete(completion{lease: j.lease, outcome: o, in: in})
	case fetched:
		j.page(e)
	case signInFailed:
		j.signInFailed(e)
	case renderFailed:
		j.renderFailed(e)
	}
}

// signInFailed queues the URL again after a backoff while its source
// cannot authenticate, and once it has waited max_temporary_errors times
// holds it as an error until the next cycle, its document kept: a refused
// sign-in says nothing about the page, and must not empty the index of
// everything behind it.
func (j *job) signInFailed(e end) {
	c, name, rec := j.c, j.src.cfg.Name, j.rec
	attempts := rec.TempErrCount + 1
	if prev, seen := c.signInWarned.swap(name, e.detail); !seen || prev != e.detail {
		c.log.Error("authentication failed: the source's pages wait, their documents kept", "source", name,
			"reason", e.reason, "err", e.detail)
	}
	c.log.Debug("authentication failed: the page waits", "url", j.item.URL, "source", name, "reason", e.reason,
		"err", e.detail, "attempts", attempts)
	if attempts >= j.src.cfg.MaxTemporaryErrors {
		c.reportNow().Failure(name, j.item.URL, e.reason, e.detail)
		c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Error, Reason: e.reason, Detail: e.detail,
			NoRequest: e.reach == unreached}})
		return
	}
	c.reportNow().Reason(name, j.item.URL, e.reason, e.detail)
	c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Waiting, Reason: e.reason, Detail: e.detail,
		Backoff: c.now().Add(c.timing.backoff(rec.TempErrCount)), NoRequest: e.reach == unreached}})
}

// exclude records a URL the crawl space, robots.txt or its response keep out.
func (j *job) exclude(reason, detail string) {
	c, rec, name := j.c, j.rec, j.src.cfg.Name
	c.reportNow().Reason(name, rec.URL, reason, detail)
	c.log.Debug("excluded", "url", rec.URL, "source", name, "reason", reason, "detail", detail)
	outcome := frontier.Outcome{State: frontier.Excluded, Reason: reason, Detail: detail}
	w := unindex(rec)
	c.complete(completion{lease: j.lease, outcome: outcome, write: w})
}

// failed records a fetch that got no status, for good. Its document is
// deleted when the error repeats: ErrCount > 0 says the previous attempt
// failed permanently too (a lease's record reads InFlight, so its state
// cannot tell).
func (j *job) failed(e end) {
	c, name := j.c, j.src.cfg.Name
	c.reportNow().Failure(name, j.item.URL, e.reason, e.detail)
	c.log.Info("fetch failed", "url", j.item.URL, "source", name, "reason", e.reason, "err", e.detail)
	outcome := frontier.Outcome{State: frontier.Error, Reason: e.reason, Detail: e.detail}
	var w *write
	if j.rec.ErrCount > 0 {
		w = unindex(j.rec)
	}
	outcome.NoRequest = e.reach == unreached
	c.complete(completion{lease: j.lease, outcome: outcome, write: w})
}

// httpError records an error status. A document is deleted on 404 and
// 410 at once, on other permanent errors when the error repeats.
func (j *job) httpError(e end) {
	c, name := j.c, j.src.cfg.Name
	c.reportNow().Failure(name, j.item.URL, e.reason, "")
	c.log.Info("fetch failed", "url", j.item.URL, "source", name, "reason", e.reason, "status", e.status)
	outcome := frontier.Outcome{State: frontier.Error, Reason: e.reason, Status: e.status}
	var w *write
	if e.status == http.StatusNotFound || e.status == http.StatusGone || j.rec.ErrCount > 0 {
		w = unindex(j.rec)
	}
	c.complete(completion{lease: j.lease, outcome: outcome, write: w})
}

// temporary queues the URL again after a backoff of its host, until it has
// failed max_temporary_errors times in a row; then it is an error and its
// document is deleted. The cause goes with each retry to the URL's history
// and with the error to the log and the report.
func (j *job) temporary(e end) {
	c, name := j.c, j.src.cfg.Name
	if e.attempts >= j.src.cfg.MaxTemporaryErrors {
		c.reportNow().Failure(name, j.item.URL, e.reason, e.detail+"; temporary errors in a row: "+strconv.Itoa(e.attempts))
		c.log.Info("fetch failed", "url", j.item.URL, "source", name, "reason", e.reason, "status", e.status,
			"detail", e.detail, "attempts", e.attempts)
		outcome := frontier.Outcome{State: frontier.Error, Reason: e.reason, Status: e.status, Detail: e.detail,
			NoRequest: e.reach == unreached}
		w := unindex(j.rec)
		c.complete(completion{lease: j.lease, outcome: outcome, write: w})
		return
	}
	c.log.Debug("temporary failure, retrying later", "url", j.item.URL, "source", name, "reason", e.reason,
		"status", e.status, "detail", e.detail, "attempts", e.attempts, "retry_at", e.until)
	c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Waiting, Reason: e.reason, Status: e.status, Detail: e.detail,
		Backoff: e.until, NoRequest: e.reach == unreached}})
}

// redirected records a 3xx and queues its target as a URL of its own.
func (j *job) redirected(e end) {
	c, it := j.c, j.item
	outcome := frontier.Outcome{State: frontier.Fetched, Status: e.status, Target: e.target, ReadLinks: true}
	if e.route.Crawl {
		outcome.Links = []uint64{frontier.LinkKey(e.target)}
		next := queueItem(e.to.Name, e.target, e.found, it.Depth, frontier.Redirect, e.route.Priority)
		next.Hops, next.Via = it.Hops+1, it.URL
		if _, err := c.front.Add(next); err != nil {
			c.log.Error("cannot queue redirect target", "url", e.target, "source", j.src.cfg.Name, "err", err)
		}
	} else {
		var refused refusals
		refused.add(e.to, e.target, e.found, it.Depth, e.route)
		c.recordRefusals(&refused)
	}
	c.decided(j.src.cfg.Name, it.URL, "redirect", e.target, e.status)
	// The URL no longer holds a document of its own.
	w := unindex(j.rec)
	c.complete(completion{lease: j.lease, outcome: outcome, write: w})
}

// page turns a fetched page into links and, unless something says
// otherwise, a document.
func (j *job) page(e end) {
	c, src, d, it, rec, res := j.c, j.src, j.d, j.item, j.rec, e.res
	ex, docSource := c.extractorFor(src, d, e.mediaType)
	hdr := res.Header
	if e.detail != "" || docfields.Generic(docfields.MediaType(hdr.Get("Content-Type"))) {
		// The extractor reads the type the bytes were found to be.
		hdr = hdr.Clone()
		hdr.Set("Content-Type", e.mediaType)
	}
	page := mapping.Page{URL: j.u, Header: hdr, Body: res.Body, Depth: it.Depth,
		Source: docSource, Fetched: e.fetched, AddMeta: addMeta(d)}
	if j.request != it.URL {
		page.Request = j.request
	}
	out, err := ex.Extract(page)
	if err != nil {
		j.unreadable(err)
		return
	}
	obey := *src.cfg.Robots.Obey
	follow := d.Follow && (!out.Robots.NoFollow || src.cfg.Robots.IgnoreNofollow || !obey)
	outcome := frontier.Outcome{State: frontier.Fetched, Status: http.StatusOK,
		ETag: res.Header.Get("ETag"), LastModified: res.Header.Get("Last-Modified"), Hash: out.Doc.ContentHash,
		ReadLinks: true}
	if follow && *src.cfg.Discovery {
		outcome.Found = j.found(out.Links)
	}
	outcome.Detail = c.pageWarnings(src.cfg.Name, it.URL, out, outcome.Found != nil, e.detail)
	if notes := c.renderNotes(src.cfg.Name, it.URL, res.Rendered); notes != "" {
		outcome.Detail = strings.TrimPrefix(outcome.Detail+"; "+notes, "; ")
	}

	// A canonical URL elsewhere on the site holds the document; this URL is an alias.
	if canon := j.canonical(out.Canonical); canon != "" {
		if outcome.Detail != "" {
			outcome.Detail = canon + "; " + outcome.Detail // the event would show the target alone
		}
		outcome.Target = canon
		outcome.Links = append(outcome.Links, frontier.LinkKey(canon))
		c.decided(src.cfg.Name, it.URL, "canonical_alias", canon, http.StatusOK)
		w := unindex(rec)
		c.complete(completion{lease: j.lease, outcome: outcome, write: w})
		return
	}
	noindex := out.Robots.NoIndex && obey && !src.cfg.Robots.IgnoreNoindex
	var w *write
	switch {
	case !d.Index:
		c.decided(src.cfg.Name, it.URL, string(d.Reason), d.Rule, http.StatusOK)
		w = unindex(rec)
	case noindex:
		c.decided(src.cfg.Name, it.URL, "noindex", "", http.StatusOK)
		w = unindex(rec)
	default:
		w = j.document(out.Doc, &outcome)
	}
	c.complete(completion{lease: j.lease, outcome: outcome, write: w, after: j.unlockGroup})
}

// document is the write of a page that is indexed: its document, unless
// the index holds it as it is, or, when it is a duplicate, the deletion of
// a document of its own, the primary of its group holding the group's.
func (j *job) document(doc docfields.Document, o *frontier.Outcome) *write {
	c, src, rec := j.c, j.src, j.rec
	if g := c.groups(src); g != nil {
		// Members of one group decide one at a time, each seeing the
		// outcomes stored before it: two copies fetched at once would
		// otherwise both claim the document.
		j.unlockGroup = c.lockGroup(src.cfg.Name, doc.ContentHash)
		primary, err := j.joinGroup(g, &doc, o)
		switch {
		case err != nil:
			// Without its group the page is indexed as its own document;
			// the store failing will stop the crawl soon enough.
			c.log.Error("cannot read the page's group of duplicates", "url", j.item.URL, "source", src.cfg.Name, "err", err)
			o.Content, o.Claim = "", 0
		case primary != j.item.URL:
			c.decided(src.cfg.Name, j.item.URL, "duplicate", primary, http.StatusOK)
			// The page's history (status -url) names the URL holding its document.
			note := "duplicate: " + primary
			if o.Detail != "" {
				note += "; " + o.Detail
			}
			o.Detail = note
			return unindex(rec)
		}
	}
	if rec.Indexed && rec.Hash == doc.ContentHash && rec.Pending == "" {
		// Same content as the indexed document: no write.
		c.reportNow().unchanged(src.cfg.Name)
		return nil
	}
	return &write{id: docfields.ID(doc.URL), url: doc.URL, source: src.cfg.Name, doc: &doc}
}

// unreadable records a page or file its extractor could not read, under
// the reason the reader gave: encrypted, corrupt and too_large leave it
// out (its document, if any, deleted: the file it came from is gone as a
// readable file); extract_timeout is an error, whose document is deleted
// when it repeats, since a loaded machine may take longer once; and an
// extractor out of reach (a Tika server down) is the crawler's fault, not
// the file's: the URL waits and is tried again, and its document stays.
func (j *job) unreadable(err error) {
	reason := document.ReasonOf(err)
	switch reason {
	case document.ReasonUnavailable:
		j.extractorDown(err)
	case document.ReasonTimeout:
		j.failed(end{kind: failed, reason: reason, detail: err.Error()})
	default:
		j.exclude(reason, err.Error())
	}
}

// extractorDown queues the URL again after a backoff while an extractor
// is out of reach, and once it has waited max_temporary_errors times holds
// it as an error until the next cycle, its document kept.
func (j *job) extractorDown(err error) {
	c, name, rec := j.c, j.src.cfg.Name, j.rec
	attempts := rec.TempErrCount + 1
	reason, detail := document.ReasonUnavailable, err.Error()
	c.log.Warn("extractor unavailable: the file waits", "url", j.item.URL, "source", name, "reason", reason,
		"err", detail, "attempts", attempts)
	if attempts >= j.src.cfg.MaxTemporaryErrors {
		c.reportNow().Failure(name, j.item.URL, reason, detail)
		c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Error, Reason: reason, Detail: detail}})
		return
	}
	c.reportNow().Reason(name, j.item.URL, reason, detail)
	c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Waiting, Reason: reason, Detail: detail,
		Backoff: c.now().Add(c.timing.backoff(rec.TempErrCount))}})
}

// found routes each link of the page to the source whose crawl space holds
// it, for the page's outcome to queue in the class its decision gives, and
// collects the refused ones, for the outcome to record with their reasons.
// A rel=nofollow link is left out while the source obeys it.
func (j *job) found(links []mapping.Link) *frontier.Found {
	from := j.item
	obeyNofollow := *j.src.cfg.Robots.Obey && !j.src.cfg.Robots.IgnoreNofollow
	ds := discovered{items: make([]frontier.Item, 0, len(links))}
	for _, l := range links {
		if l.NoFollow && obeyNofollow {
			continue
		}
		if it := ds.add(j.c.rules, j.src.rules, l.URL, from.Depth+1); it != nil {
			it.Via = from.URL
		}
	}
	j.c.reportUnstorable(&ds.refused)
	fd := &frontier.Found{Links: ds.items}
	for reason, items := range ds.refused.byReason {
		fd.Refused = append(fd.Refused, frontier.Refused{Reason: string(reason), Detail: ds.refused.rule[reason], Items: items})
	}
	return fd
}

// canonical returns the URL a rel=canonical names when it is another URL on
// the same site that the crawl space allows; that URL then holds the
// document and is queued if it is new.
func (j *job) canonical(raw string) string {
	if raw == "" {
		return ""
	}
	found, err := urlnorm.Found(raw)
	if err != nil {
		return ""
	}
	it, src := j.item, j.src
	cu, d := src.rules.DecideFound(found, it.Depth)
	if cu == it.URL || urlnorm.Origin(cu) != urlnorm.Origin(it.URL) || !d.Crawl || !d.Index {
		return ""
	}
	next := queueItem(src.cfg.Name, cu, found, it.Depth, frontier.Redirect, d.Priority)
	if _, err := j.c.front.Add(next); err != nil {
		j.c.log.Error("cannot queue canonical URL", "url", cu, "source", src.cfg.Name, "err", err)
	}
	return cu
}
