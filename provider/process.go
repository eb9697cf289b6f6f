package provider

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Temporary failures back a host off for retryBase << attempts, at most
// retryMax. Variables only so tests can shorten them.
var (
	retryBase = 2 * time.Second
	retryMax  = 10 * time.Minute
)

// process fetches one leased URL and records its outcome.
func (c *Crawler) process(ctx context.Context, lease *frontier.Lease) {
	it, rec := lease.Item(), lease.Record()
	src := c.sources[it.Source]
	if src == nil {
		// A source removed from the config: its URLs leave the crawl.
		o := frontier.Outcome{State: frontier.Excluded, Reason: "source_removed", NoRequest: true}
		w := c.unindex(rec, &o)
		c.complete(lease, o, w)
		return
	}
	name := src.cfg.Name

	// The crawl space may have changed since the URL was queued.
	d := src.rules.Decide(it.URL, it.Depth)
	if !d.Crawl {
		c.exclude(lease, rec, src, string(d.Reason), d.Rule)
		return
	}
	u, err := url.Parse(it.URL)
	if err != nil {
		c.exclude(lease, rec, src, string(rules.ReasonInvalid), err.Error())
		return
	}
	if ok, why := c.robotsAllow(ctx, lease, src, u); !ok {
		if why != "" {
			c.exclude(lease, rec, src, string(rules.ReasonRobots), why)
		}
		return
	}

	hdr := http.Header{}
	// A lease's record always reads InFlight: what the URL holds is told by
	// its bookkeeping. A write still pending must fetch the page whole.
	// A page whose links were never stored is read whole, or its links
	// would stay unknown and no orphan could be decided.
	conditional := rec.Indexed && rec.Pending == "" && rec.HasLinks && (rec.ETag != "" || rec.LastModified != "" || !rec.FetchedAt.IsZero())
	if conditional {
		if rec.ETag != "" {
			hdr.Set("If-None-Match", rec.ETag)
		}
		// The stored Last-Modified, else the last crawl time (seed 002).
		if rec.LastModified != "" {
			hdr.Set("If-Modified-Since", rec.LastModified)
		} else if !rec.FetchedAt.IsZero() {
			hdr.Set("If-Modified-Since", rec.FetchedAt.UTC().Format(http.TimeFormat))
		}
	}
	fetched := time.Now().UTC()
	res := src.fetch.Page(ctx, it.URL, hdr)
	if ctx.Err() != nil {
		lease.Release()
		return
	}
	if res.Err != nil {
		c.failed(lease, rec, src, res.Err)
		return
	}
	c.fetchedPage(lease, name, res, time.Since(fetched))
	switch st := res.Status; {
	case st == http.StatusNotModified:
		if !conditional {
			// Exalead: a 304 to an unconditional GET is inconsistent, a permanent error.
			c.httpError(lease, rec, src, st, res.Header, "http_304_unconditional")
			return
		}
		c.report.unchanged(name)
		c.log.Debug("unchanged", "url", it.URL, "source", name, "status", st)
		c.complete(lease, frontier.Outcome{State: frontier.Fetched, Status: st, ETag: rec.ETag, LastModified: rec.LastModified, Hash: rec.Hash}, nil)
		return
	case st >= 300 && st < 400:
		c.redirect(lease, rec, src, u, res)
		return
	case st != http.StatusOK:
		c.httpError(lease, rec, src, st, res.Header, "")
		return
	}
	if res.Skip.Reason != "" {
		c.exclude(lease, rec, src, string(res.Skip.Reason), docfields.MediaType(res.Header.Get("Content-Type")))
		return
	}
	if res.TooLarge || int64(len(res.Body)) > c.cfg.Fetch.MaxBodyBytes {
		// Never a silently truncated document: the page is left out, with its reason.
		c.exclude(lease, rec, src, "too_large", fmt.Sprintf("over %d bytes", c.cfg.Fetch.MaxBodyBytes))
		return
	}
	mt := docfields.MediaType(res.Header.Get("Content-Type"))
	if res.Header.Get("Content-Type") == "" {
		// No type to decide from before the body came: its first bytes decide.
		sniffed := http.DetectContentType(res.Body)
		mt = docfields.MediaType(sniffed)
		if d := src.rules.DecideMIME(sniffed, it.URL); !d.Crawl {
			c.exclude(lease, rec, src, string(d.Reason), mt)
			return
		}
	}
	c.page(ctx, lease, rec, src, d, u, res, mt, fetched)
}

// page turns a fetched HTML page into links and, unless something says
// otherwise, a document.
func (c *Crawler) page(ctx context.Context, lease *frontier.Lease, rec frontier.Record, src *source, d rules.Decision, u *url.URL, res *fetch.Response, mediaType string, fetched time.Time) {
	it := lease.Item()
	ex, docSource := c.extractorFor(src, d, mediaType)
	out, err := ex.Extract(mapping.Page{URL: u, Header: res.Header, Body: res.Body, Depth: it.Depth,
		Source: docSource, Fetched: fetched, AddMeta: addMeta(d)})
	if err != nil {
		c.exclude(lease, rec, src, "extract_failed", err.Error())
		return
	}
	obey := config.Bool(src.cfg.Robots.Obey, true)
	follow := d.Follow && (!out.Robots.NoFollow || src.cfg.Robots.IgnoreNofollow || !obey)
	outcome := frontier.Outcome{State: frontier.Fetched, Status: http.StatusOK,
		ETag: res.Header.Get("ETag"), LastModified: res.Header.Get("Last-Modified"), Hash: out.Doc.ContentHash,
		ReadLinks: true}
	if follow && config.Bool(src.cfg.Discovery, true) {
		outcome.Found = c.found(src, it, out.Links, obey && !src.cfg.Robots.IgnoreNofollow)
	}
	outcome.Detail = c.pageWarnings(src.cfg.Name, it.URL, out, outcome.Found != nil)

	// A canonical URL elsewhere on the site holds the document; this URL is an alias.
	if canon := c.canonical(src, out.Canonical, it); canon != "" {
		if outcome.Detail != "" {
			outcome.Detail = canon + "; " + outcome.Detail // the event would show the target alone
		}
		outcome.Target = canon
		outcome.Links = append(outcome.Links, frontier.LinkKey(canon))
		c.decided(src.cfg.Name, it.URL, "canonical_alias", canon, http.StatusOK)
		w := c.unindex(rec, &outcome)
		c.complete(lease, outcome, w)
		return
	}
	noindex := out.Robots.NoIndex && obey && !src.cfg.Robots.IgnoreNoindex
	var w *write
	switch {
	case !d.Index:
		c.decided(src.cfg.Name, it.URL, string(d.Reason), d.Rule, http.StatusOK)
		w = c.unindex(rec, &outcome)
	case noindex:
		c.decided(src.cfg.Name, it.URL, "noindex", "", http.StatusOK)
		w = c.unindex(rec, &outcome)
	case rec.Indexed && rec.Hash == out.Doc.ContentHash && rec.Pending == "":
		// Same content as the indexed document: no write.
		c.report.unchanged(src.cfg.Name)
	default:
		doc := out.Doc
		id := docfields.ID(doc.URL)
		outcome.Edit = func(r *frontier.Record) { r.DocID, r.Pending = id, pendingIndex }
		w = &write{id: id, url: doc.URL, source: src.cfg.Name, doc: &doc}
	}
	c.complete(lease, outcome, w)
}

// Pending writes recorded on a URL until the sink acknowledges them.
const (
	pendingIndex  = "index"
	pendingDelete = "delete"
)

// write is a sink write decided while a lease is held. It is recorded as
// pending in the lease's outcome and handed to the sink only after the
// outcome is stored, so the acknowledgement always finds it recorded.
type write struct {
	del     bool
	id, url string
	source  string
	doc     *docfields.Document
}

// unindex arranges for the URL's document, if one was indexed or is on its
// way, to be deleted.
func (c *Crawler) unindex(rec frontier.Record, o *frontier.Outcome) *write {
	if !rec.Indexed && rec.Pending == "" {
		return nil
	}
	id := rec.DocID
	if id == "" {
		id = docfields.ID(rec.URL)
	}
	o.Edit = func(r *frontier.Record) { r.DocID, r.Pending = id, pendingDelete }
	return &write{del: true, id: id, url: rec.URL, source: rec.Source}
}

// found routes each link of a page to the source whose crawl space holds
// it, for the page's outcome to queue in the class its decision gives, and
// collects the refused ones, for the outcome to record with their reasons.
// Links are judged as found; what is queued is what the query filter makes
// of them, and what is refused is recorded as refused (see Set.Route).
func (c *Crawler) found(src *source, from frontier.Item, links []mapping.Link, obeyNofollow bool) *frontier.Found {
	items := make([]frontier.Item, 0, len(links))
	var refused refusals
	for _, l := range links {
		if l.NoFollow && obeyNofollow {
			continue
		}
		fu, err := urlnorm.Normalize(l.URL)
		if err != nil {
			continue
		}
		to, u, d := c.rules.Route(fu, from.Depth+1, src.rules)
		if !d.Crawl {
			refused.add(to, u, from.Depth+1, d)
			continue
		}
		items = append(items, frontier.Item{URL: u, Source: to.Name, Depth: from.Depth + 1, Class: classOf(d), Shift: d.Priority, Via: from.URL})
	}
	c.reportUnstorable(&refused)
	fd := &frontier.Found{Links: items}
	for reason, items := range refused.byReason {
		fd.Refused = append(fd.Refused, frontier.Refused{Reason: string(reason), Detail: refused.rule[reason], Items: items})
	}
	return fd
}

// reportRefused counts the refused URLs a stored outcome recorded for the
// first time.
func (c *Crawler) reportRefused(fd *frontier.Found) {
	for _, rf := range fd.Refused {
		if rf.New > 0 {
			c.report.ReasonN(rf.Items[0].Source, rf.Items[0].URL, rf.Reason, rf.Detail, rf.New)
		}
	}
}

// refusals collects the URLs a page or sitemap lists that the crawl space
// refuses, by reason, to be recorded in one write per reason.
type refusals struct {
	byReason map[rules.Reason][]frontier.Item
	rule     map[rules.Reason]string // one deciding rule per reason, for the report's examples
	// unstorable are refused URLs longer than the store can record (any
	// over-long URL is refused: url_too_long at the latest): they are
	// counted and reported, never stored.
	unstorable map[uint64]unstorable
}

type unstorable struct {
	source, url string
	reason      rules.Reason
	rule        string
}

func (r *refusals) add(to *rules.Source, u string, depth int, d rules.Decision) {
	name := ""
	if to != nil {
		name = to.Name
	}
	if len(u) > frontier.MaxURLLength {
		if r.unstorable == nil {
			r.unstorable = map[uint64]unstorable{}
		}
		r.unstorable[frontier.LinkKey(u)] = unstorable{name, u, d.Reason, d.Rule}
		return
	}
	if r.byReason == nil {
		r.byReason, r.rule = map[rules.Reason][]frontier.Item{}, map[rules.Reason]string{}
	}
	r.byReason[d.Reason] = append(r.byReason[d.Reason], frontier.Item{URL: u, Source: name, Depth: depth})
	r.rule[d.Reason] = d.Rule
}

// reportUnstorable counts the refused URLs too long to store, once per page
// or sitemap that lists them: the store cannot remember them across pages.
// The example is cut short, so a report never carries a 40 KB URL.
func (c *Crawler) reportUnstorable(r *refusals) {
	for _, u := range r.unstorable {
		detail := fmt.Sprintf("%d bytes, more than the state store holds (%d)", len(u.url), frontier.MaxURLLength)
		if u.rule != "" {
			detail = u.rule + ": " + detail
		}
		c.report.ReasonN(u.source, shortURL(u.url), string(u.reason), detail, 1)
	}
}

// shortURL cuts a URL to a length fit for a report or a log line.
func shortURL(u string) string {
	const keep = 200
	if len(u) <= keep {
		return u
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(u[cut]) {
		cut--
	}
	return u[:cut] + "…"
}

// recordRefusals stores refused URLs as Excluded with their reason and
// counts those seen for the first time, so the report counts URLs, not links.
func (c *Crawler) recordRefusals(r *refusals) {
	c.reportUnstorable(r)
	for reason, items := range r.byReason {
		n, err := c.front.Exclude(string(reason), items...)
		if err != nil {
			c.log.Error("cannot record refused URLs", "url", items[0].URL, "source", items[0].Source, "reason", string(reason), "count", len(items), "err", err)
			continue
		}
		if n == 0 {
			continue
		}
		src := items[0].Source
		c.report.ReasonN(src, items[0].URL, string(reason), r.rule[reason], n)
	}
}

// classOf is Exalead's fifo for a discovered URL.
func classOf(d rules.Decision) frontier.Class {
	switch {
	case d.Index && d.Follow:
		return frontier.IndexFollow
	case d.Index:
		return frontier.IndexOnly
	default:
		return frontier.FollowOnly
	}
}

// canonical returns the URL a rel=canonical names when it is another URL on
// the same site that the crawl space allows; that URL then holds the
// document and is queued if it is new.
func (c *Crawler) canonical(src *source, raw string, it frontier.Item) string {
	if raw == "" {
		return ""
	}
	found, err := urlnorm.Normalize(raw)
	if err != nil {
		return ""
	}
	cu, d := src.rules.DecideFound(found, it.Depth)
	if cu == it.URL || frontier.HostKey(cu) != frontier.HostKey(it.URL) || !d.Crawl || !d.Index {
		return ""
	}
	if _, err := c.front.Add(frontier.Item{URL: cu, Source: src.cfg.Name, Depth: it.Depth, Class: frontier.Redirect, Shift: d.Priority}); err != nil {
		c.log.Error("cannot queue canonical URL", "url", cu, "source", src.cfg.Name, "err", err)
	}
	return cu
}

// redirect records a 3xx and queues its target as a URL of its own.
func (c *Crawler) redirect(lease *frontier.Lease, rec frontier.Record, src *source, u *url.URL, res *fetch.Response) {
	it := lease.Item()
	loc := res.Header.Get("Location")
	found, err := urlnorm.Resolve(u, loc)
	if loc == "" || err != nil {
		// Exalead: a redirect to a malformed URL is a permanent error.
		c.httpError(lease, rec, src, res.Status, res.Header, "redirect_malformed")
		return
	}
	to, target, d := c.rules.Route(found, it.Depth, src.rules)
	if target == it.URL {
		c.httpError(lease, rec, src, res.Status, res.Header, "redirect_loop")
		return
	}
	if it.Hops >= c.cfg.Fetch.MaxRedirects {
		c.httpError(lease, rec, src, res.Status, res.Header, "too_many_redirects")
		return
	}
	outcome := frontier.Outcome{State: frontier.Fetched, Status: res.Status, Target: target, ReadLinks: true}
	if d.Crawl {
		outcome.Links = []uint64{frontier.LinkKey(target)}
		next := frontier.Item{URL: target, Source: to.Name, Depth: it.Depth, Class: frontier.Redirect, Shift: d.Priority, Hops: it.Hops + 1, Via: it.URL}
		if _, err := c.front.Add(next); err != nil {
			c.log.Error("cannot queue redirect target", "url", target, "source", src.cfg.Name, "err", err)
		}
	} else {
		var refused refusals
		refused.add(to, target, it.Depth, d)
		c.recordRefusals(&refused)
	}
	c.decided(src.cfg.Name, it.URL, "redirect", target, res.Status)
	// The URL no longer holds a document of its own.
	w := c.unindex(rec, &outcome)
	c.complete(lease, outcome, w)
}

// httpError records an error status. Exalead's classification: 503 with
// Retry-After and 429 are temporary (the host backs off); every other status
// is permanent. A document is deleted on 404 and 410 at once, on other
// permanent errors when the error repeats.
func (c *Crawler) httpError(lease *frontier.Lease, rec frontier.Record, src *source, status int, h http.Header, reason string) {
	it := lease.Item()
	if reason == "" {
		reason = "http_" + strconv.Itoa(status)
	}
	if status == http.StatusTooManyRequests || status == http.StatusServiceUnavailable && h.Get("Retry-After") != "" {
		until := time.Now().Add(retryAfter(h.Get("Retry-After"), rec.TempErrCount))
		cause := "HTTP " + strconv.Itoa(status) + " " + http.StatusText(status)
		if ra := h.Get("Retry-After"); ra != "" {
			cause += ", Retry-After: " + ra
		}
		c.temporary(lease, rec, src, temporaryError{reason: reason, status: status, cause: cause, until: until, attempts: rec.TempErrCount + 1})
		return
	}
	c.report.Reason(src.cfg.Name, it.URL, reason, "", true)
	c.log.Info("fetch failed", "url", it.URL, "source", src.cfg.Name, "reason", reason, "status", status)
	outcome := frontier.Outcome{State: frontier.Error, Reason: reason, Status: status}
	var w *write
	// ErrCount > 0: the previous attempt failed permanently too (a lease's
	// record reads InFlight, so its state cannot tell).
	if status == http.StatusNotFound || status == http.StatusGone || rec.ErrCount > 0 {
		w = c.unindex(rec, &outcome)
	}
	c.complete(lease, outcome, w)
}

// failed records a fetch that got no status: a network error.
func (c *Crawler) failed(lease *frontier.Lease, rec frontier.Record, src *source, err error) {
	it := lease.Item()
	reason, temporary := fetch.Classify(err)
	if temporary {
		c.temporary(lease, rec, src, temporaryError{reason: reason, cause: errCause(err),
			until: time.Now().Add(backoff(rec.TempErrCount)), attempts: rec.TempErrCount + 1})
		return
	}
	cause := errCause(err)
	c.report.Reason(src.cfg.Name, it.URL, reason, cause, true)
	c.log.Info("fetch failed", "url", it.URL, "source", src.cfg.Name, "reason", reason, "err", cause)
	outcome := frontier.Outcome{State: frontier.Error, Reason: reason, Detail: cause}
	var w *write
	if rec.ErrCount > 0 {
		w = c.unindex(rec, &outcome)
	}
	var addrErr *fetch.AddressError
	outcome.NoRequest = errors.As(err, &addrErr)
	c.complete(lease, outcome, w)
}

// temporaryError is a failure worth retrying: its reason code, the status
// that came with it (0 when none did), what happened in words, when the
// host may be tried again and how many times in a row it has failed.
type temporaryError struct {
	reason    string
	status    int
	cause     string
	until     time.Time
	attempts  int
	noRequest bool // no request reached the host (robots.txt was unavailable)
}

// temporary queues the URL again after a backoff of its host, until it has
// failed max_temporary_errors times in a row; then it is an error and its
// document is deleted. The cause goes with each retry to the URL's history
// and with the error to the log and the report.
func (c *Crawler) temporary(lease *frontier.Lease, rec frontier.Record, src *source, te temporaryError) {
	it := lease.Item()
	if te.attempts >= src.cfg.MaxTemporaryErrors {
		c.report.Reason(src.cfg.Name, it.URL, te.reason, te.cause+"; temporary errors in a row: "+strconv.Itoa(te.attempts), true)
		c.log.Info("fetch failed", "url", it.URL, "source", src.cfg.Name, "reason", te.reason, "status", te.status,
			"detail", te.cause, "attempts", te.attempts)
		outcome := frontier.Outcome{State: frontier.Error, Reason: te.reason, Status: te.status, Detail: te.cause, NoRequest: te.noRequest}
		w := c.unindex(rec, &outcome)
		c.complete(lease, outcome, w)
		return
	}
	c.log.Debug("temporary failure, retrying later", "url", it.URL, "source", src.cfg.Name, "reason", te.reason,
		"status", te.status, "detail", te.cause, "attempts", te.attempts, "retry_at", te.until)
	c.complete(lease, frontier.Outcome{State: frontier.Waiting, Reason: te.reason, Status: te.status, Detail: te.cause,
		Backoff: te.until, NoRequest: te.noRequest}, nil)
}

// errCause is a failed request's error in words, without the method and
// URL that net/http puts before it (the URL is the log line's and the
// report's own). A deadline reached while the body was read says only
// "context deadline exceeded", so a timeout is named as one.
func errCause(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	msg := err.Error()
	if (errors.Is(err, context.DeadlineExceeded) || os.IsTimeout(err)) && !strings.Contains(strings.ToLower(msg), "timeout") {
		msg = "timeout: " + msg
	}
	return msg
}

// robotsCause says why a host's robots.txt could not be read.
func robotsCause(ue *robots.UnavailableError) string {
	if ue.Err != nil {
		return "robots.txt " + ue.URL + ": " + errCause(ue.Err)
	}
	return "robots.txt " + ue.URL + ": HTTP " + strconv.Itoa(ue.Status)
}

// exclude records a URL the crawl space, robots.txt or its response keep out.
func (c *Crawler) exclude(lease *frontier.Lease, rec frontier.Record, src *source, reason, detail string) {
	c.report.Reason(src.cfg.Name, rec.URL, reason, detail, false)
	c.log.Debug("excluded", "url", rec.URL, "source", src.cfg.Name, "reason", reason, "detail", detail)
	outcome := frontier.Outcome{State: frontier.Excluded, Reason: reason, Detail: detail}
	w := c.unindex(rec, &outcome)
	c.complete(lease, outcome, w)
}

// complete records an outcome and, once it is stored, performs its sink
// write, so the acknowledgement always finds the write recorded as pending.
// The worker does not wait for the store: the frontier calls back after the
// commit. An outcome that cannot be stored is logged and counted
// (record_failed), its sink write is not made, and the frontier holds its
// URL back until the next cycle: fetching it again at once would only fail
// again. A store that cannot write at all stops the crawl (Next reports it).
func (c *Crawler) complete(lease *frontier.Lease, o frontier.Outcome, w *write) {
	linksGone(&o, lease.Record())
	if w != nil {
		o.History = append(o.History, sentEvent(w))
	}
	it := lease.Item()
	notRecorded := func(err error) {
		c.log.Error("cannot record outcome", "url", it.URL, "source", it.Source,
			"state", o.State.String(), "reason", reasonRecordFailed, "outcome", o.Reason, "status", o.Status, "err", err)
		c.report.Reason(it.Source, it.URL, reasonRecordFailed, err.Error(), true)
	}
	err := lease.CompleteAsync(o, func(err error) {
		if err != nil {
			notRecorded(err)
			return
		}
		if o.Found != nil {
			c.reportRefused(o.Found)
		}
		if w != nil {
			c.write(w)
		}
	})
	if err != nil {
		notRecorded(err)
	}
}

// reasonRecordFailed counts the URLs whose outcome the state store did not take.
const reasonRecordFailed = "record_failed"

// write hands a recorded write to the sink. It runs on the frontier's
// completion callback, so it waits on a full sink only while the crawl
// runs: a stopped crawl leaves the write pending for the next one.
func (c *Crawler) write(w *write) {
	c.report.expect(w.url, w.source)
	ctx := c.writeContext()
	var err error
	if w.del {
		err = c.sink.Delete(ctx, w.id, w.url)
	} else {
		err = c.sink.Index(ctx, w.doc)
	}
	if err == nil {
		return
	}
	// The write stays pending in the store and is sent again by the next cycle.
	if ctx.Err() != nil {
		c.unsent.Add(1) // stopping: counted in one line at Close
		return
	}
	c.log.Warn("sink write failed", "url", w.url, "source", w.source, "delete", w.del, "err", err)
}

// robotsAllow checks robots.txt for u. A refusal returns the deciding line;
// a robots.txt that cannot be read postpones the URL (ok false, why "").
func (c *Crawler) robotsAllow(ctx context.Context, lease *frontier.Lease, src *source, u *url.URL) (ok bool, why string) {
	if !config.Bool(src.cfg.Robots.Obey, true) {
		return true, ""
	}
	r, err := c.robots.Get(ctx, u)
	if err == nil && config.Bool(src.cfg.Politeness.ObeyCrawlDelay, true) {
		if d := r.CrawlDelay(c.agent); d > 0 {
			c.delays.Store(lease.HostKey(), d)
		}
	}
	// robots.txt requested for this lease: the page is a second request
	// and waits the host's delay, queued again rather than holding a worker.
	paused := c.robotsPause(lease.HostKey())
	var unavailable *robots.UnavailableError
	var addrErr *fetch.AddressError
	switch {
	case errors.As(err, &addrErr):
		// The host's address is refused: no robots.txt will make it allowed.
		c.failed(lease, lease.Record(), src, addrErr)
		return false, ""
	case errors.As(err, &unavailable):
		// RFC 9309: an unreachable robots.txt disallows everything until it
		// can be read. Each postponement is a temporary error of the URL.
		// The host's failed fetches count for every URL of the host: only a
		// URL or two get a turn per retry wait, and once the host has failed
		// max_temporary_errors times its URLs end the cycle in error together
		// instead of one by one, waits of up to 30 minutes apart.
		rec := lease.Record()
		attempts := max(rec.TempErrCount+1, c.robotsFailures(lease.HostKey(), unavailable.RetryAt))
		c.temporary(lease, rec, src, temporaryError{reason: "robots_unavailable", cause: robotsCause(unavailable),
			until: unavailable.RetryAt, attempts: attempts, noRequest: true})
		return false, ""
	}
	if err != nil {
		if ctx.Err() != nil {
			lease.Release() // stopping: the URL stays queued for the next start
			return false, ""
		}
		// Nothing else is expected here, but a URL given straight back
		// would be leased again at once: it waits its backoff instead.
		rec := lease.Record()
		c.temporary(lease, rec, src, temporaryError{reason: "robots_unavailable", cause: err.Error(),
			until: time.Now().Add(backoff(rec.TempErrCount)), attempts: rec.TempErrCount + 1, noRequest: true})
		return false, ""
	}
	if _, failing := c.robotsDown.Load(lease.HostKey()); failing {
		c.robotsDown.Delete(lease.HostKey())
	}
	allowed, line := r.Test(c.agent, u.RequestURI())
	if !allowed {
		return false, u.Scheme + "://" + u.Host + "/" + line
	}
	if paused {
		lease.Release()
		return false, ""
	}
	return true, ""
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), falling
// back to the backoff for the attempt.
func retryAfter(v string, attempts int) time.Duration {
	if v = strings.TrimSpace(v); v != "" {
		secs, err := strconv.ParseUint(v, 10, 63)
		switch {
		case err == nil:
			// Compared in seconds: a huge value would overflow a Duration
			// into the past, and the host would be asked again at once.
			return time.Duration(min(secs, uint64(retryMax/time.Second))) * time.Second
		case errors.Is(err, strconv.ErrRange):
			return retryMax // delay-seconds too long to hold: wait as long as we ever do
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(time.Until(t), 0), retryMax)
		}
	}
	return backoff(attempts)
}

func backoff(attempts int) time.Duration {
	// A count read from a damaged record may be anything: clamp it.
	return min(retryBase<<min(max(attempts, 0), 12), retryMax)
}

// robotsOutage counts the failed robots.txt fetches of a host since it was
// last read: each failure comes with a new retry time.
type robotsOutage struct {
	retryAt  time.Time
	failures int
}

// robotsFailures records that the host's robots.txt is unavailable until
// retryAt and returns how many fetches have failed in this outage.
func (c *Crawler) robotsFailures(hostKey string, retryAt time.Time) int {
	c.robotsMu.Lock()
	defer c.robotsMu.Unlock()
	o, _ := c.robotsDown.Load(hostKey)
	out, _ := o.(robotsOutage)
	if retryAt.After(out.retryAt) {
		out.retryAt = retryAt
		out.failures++
		c.robotsDown.Store(hostKey, out)
	}
	return out.failures
}
