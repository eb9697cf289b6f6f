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

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// unindex is the delete of the URL's document, if one was indexed or is on
// its way.
func unindex(rec frontier.Record) *write {
	if !rec.Indexed && rec.Pending == "" {
		return nil
	}
	return deletion(rec)
}

// discovered is what the URLs a page links or a sitemap lists become:
// queue items, each for the source whose crawl space holds it in the class
// its decision gives, and the URLs refused, by reason. URLs are judged as
// found; what is queued is their key, with the URL as found where it
// differs, to be requested so, and what is refused is recorded as refused
// (see Set.Route).
type discovered struct {
	items   []frontier.Item
	refused refusals
}

// add judges a URL found on a page of the source from, depth links from a
// start URL; it returns its queue item, nil when it is refused or no URL.
func (ds *discovered) add(set *rules.Set, from *rules.Source, raw string, depth int) *frontier.Item {
	found, err := urlnorm.Found(raw)
	if err != nil {
		return nil
	}
	to, u, d := set.Route(found, depth, from)
	if !d.Crawl {
		ds.refused.add(to, u, found, depth, d)
		return nil
	}
	ds.items = append(ds.items, foundItem(to, u, depth, d))
	it := &ds.items[len(ds.items)-1]
	it.SetFoundAs(found)
	return it
}

// foundItem is the queue item of u, found depth links from a start URL,
// which to's crawl space holds with decision d.
func foundItem(to *rules.Source, u string, depth int, d rules.Decision) frontier.Item {
	return frontier.Item{URL: u, Source: to.Name, Depth: depth, Class: classOf(d), Shift: d.Priority}
}

// reportRefused counts the refused URLs a stored outcome recorded for the
// first time.
func (c *Crawler) reportRefused(fd *frontier.Found) {
	for _, rf := range fd.Refused {
		if rf.New > 0 {
			c.reportNow().ReasonN(rf.Items[0].Source, rf.Items[0].URL, rf.Reason, rf.Detail, rf.New)
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

func (r *refusals) add(to *rules.Source, u, found string, depth int, d rules.Decision) {
	name := ""
	if to != nil {
		name = to.Name
	}
	if len(u) > urlnorm.MaxLength {
		if r.unstorable == nil {
			r.unstorable = map[uint64]unstorable{}
		}
		r.unstorable[frontier.LinkKey(u)] = unstorable{name, u, d.Reason, d.Rule}
		return
	}
	if r.byReason == nil {
		r.byReason, r.rule = map[rules.Reason][]frontier.Item{}, map[rules.Reason]string{}
	}
	it := frontier.Item{URL: u, Source: name, Depth: depth}
	it.SetFoundAs(found)
	r.byReason[d.Reason] = append(r.byReason[d.Reason], it)
	r.rule[d.Reason] = d.Rule
}

// reportUnstorable counts the refused URLs too long to store, once per page
// or sitemap that lists them: the store cannot remember them across pages.
// The example is cut short, so a report never carries a 40 KB URL.
func (c *Crawler) reportUnstorable(r *refusals) {
	for _, u := range r.unstorable {
		detail := fmt.Sprintf("%d bytes, more than the state store holds (%d)", len(u.url), urlnorm.MaxLength)
		if u.rule != "" {
			detail = u.rule + ": " + detail
		}
		c.reportNow().ReasonN(u.source, shortURL(u.url), string(u.reason), detail, 1)
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
		c.reportNow().ReasonN(src, items[0].URL, string(reason), r.rule[reason], n)
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

// complete records an outcome and, once it is stored, performs its sink
// write, so the acknowledgement always finds the write recorded as pending.
// The worker does not wait for the store: the frontier calls back after the
// commit. An outcome that cannot be stored is logged and counted
// (record_failed), its sink write is not made, and the frontier holds its
// URL back until the next cycle: fetching it again at once would only fail
// again. A store that cannot write at all stops the crawl (Next reports it).
func (c *Crawler) complete(lease frontier.Lease, o frontier.Outcome, w *write) {
	c.completeThen(lease, o, w, nil)
}

// knownGroup is the group of duplicates a job read for its URL before
// completing it: a 304, whose outcome keeps the URL where it was, need
// not read it again. members is nil unless the store read them at once
// (frontier.GroupReader): they are the group as the outcome leaves it,
// since it changes nothing of it but the URL's own state, and any other
// change is settled by the outcome that made it.
type knownGroup struct {
	content string
	members []frontier.Member
}

// completeThen is complete calling after once the outcome is stored or
// refused.
func (c *Crawler) completeThen(lease frontier.Lease, o frontier.Outcome, w *write, after func()) {
	c.completeIn(lease, o, w, after, nil)
}

// completeIn is completeThen with the group the URL was in when the caller
// knows it (in), else nil.
func (c *Crawler) completeIn(lease frontier.Lease, o frontier.Outcome, w *write, after func(), in *knownGroup) {
	if after != nil {
		defer func() {
			if after != nil {
				after() // the outcome never reached the store
			}
		}()
	}
	linksGone(&o, lease.Record())
	if w != nil {
		c.holdDelete(w, lease.Record())
		w.pend(&o)
	}
	it := lease.Item()
	// The group of duplicates the URL was in, to settle it once the outcome
	// has moved the URL out (a temporary failure moves nothing).
	var (
		groups   frontier.Duplicates
		oldGroup string
	)
	if o.State != frontier.Waiting {
		if groups = c.groups(c.sources[it.Source]); groups != nil {
			if in != nil {
				oldGroup = in.content
			} else {
				oldGroup, _, _ = groups.ContentOf(it.URL)
			}
		}
	}
	notRecorded := func(err error) {
		c.log.Error("cannot record outcome", "url", it.URL, "source", it.Source,
			"state", o.State.String(), "reason", reasonRecordFailed, "outcome", o.Reason, "status", o.Status, "err", err)
		c.reportNow().Failure(it.Source, it.URL, reasonRecordFailed, err.Error())
	}
	then := after
	after = nil
	err := lease.CompleteAsync(o, func(err error) {
		if then != nil {
			defer then()
		}
		if err != nil {
			notRecorded(err)
			return
		}
		if o.Found != nil {
			c.reportRefused(o.Found)
		}
		if w != nil && !w.hold {
			c.writes.send(w)
		}
		if groups != nil {
			if oldGroup != "" && oldGroup != o.Content {
				c.settleGroup(groups, it.Source, oldGroup)
			}
			switch {
			case o.Content == "":
			case in != nil && in.members != nil && in.content == o.Content:
				c.settleMembers(it.Source, in.content, in.members)
			default:
				c.settleGroup(groups, it.Source, o.Content)
			}
		}
	})
	if err != nil {
		// CompleteAsync refused the outcome: done is never called.
		after = then
		notRecorded(err)
	}
}

// reasonRecordFailed counts the URLs whose outcome the state store did not take.
const reasonRecordFailed = "record_failed"

// retryAfter reads a Retry-After header (seconds or an HTTP date), falling
// back to the backoff for the attempt; a date counts from now.
func (tm timing) retryAfter(v string, attempts int, now time.Time) time.Duration {
	if v = strings.TrimSpace(v); v != "" {
		secs, err := strconv.ParseUint(v, 10, 63)
		switch {
		case err == nil:
			// Compared in seconds: a huge value would overflow a Duration
			// into the past, and the host would be asked again at once.
			return time.Duration(min(secs, uint64(tm.retryMax/time.Second))) * time.Second
		case errors.Is(err, strconv.ErrRange):
			return tm.retryMax // delay-seconds too long to hold: wait as long as we ever do
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(t.Sub(now), 0), tm.retryMax)
		}
	}
	return tm.backoff(attempts)
}

func (tm timing) backoff(attempts int) time.Duration {
	// A count read from a damaged record may be anything: clamp it.
	return min(tm.retryBase<<min(max(attempts, 0), 12), tm.retryMax)
}
