package provider

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"hash/fnv"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// Orphans (issue 6): known pages that still hold a document but that no
// chain of links reaches any more from the roots, which are every source's
// start URLs and the URLs its sitemaps and feeds list. An incremental crawl
// never reads an unchanged page again (a 304), so each page's outlinks are
// stored when it is read (frontier.Outcome.ReadLinks) and the walk goes
// over what is stored. Each source's policy decides what an orphan gets:
// keep (it is counted and marked), recheck (it is fetched again before the
// cycle ends: still there, kept; gone, deleted as any gone page is) or
// delete (its document is deleted and the URL excluded with reason
// "orphan", until a link brings it back).
//
// Orphans are decided only at the end of a cycle whose work completed and
// which visited the source's start URLs, and never on a guess: when a start
// URL could not be read, or a page reached has links that were never read
// (its first fetch failed), no page is an orphan in that cycle.

const reasonOrphan = frontier.ReasonOrphan

// orphanFlushWait bounds the wait for the cycle's index writes before
// orphans are looked for.
const orphanFlushWait = time.Minute

// Orphan policies (config sources[].orphans) beside the default, keep.
const (
	orphansRecheck = "recheck"
	orphansDelete  = "delete"
)

// listedKey names the stored links of a source's sitemaps and feeds: the
// URLs they list. It is no URL, so no page shares it.
func listedKey(source string) string { return "sitemaps:" + source }

// linksGone gives a page the crawler now takes for gone no links: a 404 or
// 410, or a permanent error that repeats (which deletes its document too).
// Any other failure says nothing of the page, which keeps the links it had.
func linksGone(o *frontier.Outcome, rec frontier.Record) {
	if o.State == frontier.Error && (o.Status == http.StatusNotFound || o.Status == http.StatusGone || rec.ErrCount > 0) {
		o.ReadLinks, o.Links = true, nil
	}
}

// storeListed records the URLs a source's sitemaps and feeds list, as the
// links of listedKey. When some file could not be read whole, the URLs
// listed before are kept as well: a sitemap that fails must not orphan what
// it lists.
func (c *Crawler) storeListed(src *source, listed []uint64, whole bool) {
	key := listedKey(src.cfg.Name)
	if !whole {
		old, _, err := c.front.Links(key)
		if err != nil {
			c.log.Error("cannot read the URLs sitemaps listed before", "source", src.cfg.Name, "err", err)
			return
		}
		listed = append(listed, old...)
	}
	if err := c.front.SetLinks(key, listed); err != nil {
		c.log.Error("cannot record the URLs sitemaps list", "source", src.cfg.Name, "err", err)
	}
}

// orphanScan is what one walk over the store found.
type orphanScan struct {
	// undecided says why no page may be taken for an orphan; empty when
	// every page can be.
	undecided string
	found     map[string][]string // source -> orphans: fetched, indexed, not reached
	linked    []string            // pages marked orphans that are reached again
	revive    []string            // pages deleted as orphans that are reached again
	// agreed are the orphans of sources in decide whose delete the guard
	// held and that are still not reached: the walk decides it again.
	agreed []frontier.Record
	// unreached counts the pages of every configured source that hold a
	// document and are not reached, decided this cycle or not; unsettled
	// the URLs still queued, which the reach generation reads as fetched
	// (see frontier.ReachGeneration).
	unreached, unsettled int
}

// none says the walk found nothing to do for any source: a walk over the
// same roots, links and records would find nothing again.
func (s *orphanScan) none() bool {
	return s.undecided == "" && s.unreached == 0 && s.unsettled == 0 && len(s.linked) == 0 && len(s.revive) == 0 &&
		len(s.agreed) == 0
}

// orphans applies the orphan policy of each source discovered in the cycle
// once its work is done, before the cycle counts as done: rechecks are
// fetched and deletions sent in the same cycle, and a cycle cut short
// decides nothing.
func (c *Crawler) orphans(ctx context.Context, discover []*source) error {
	if len(discover) == 0 {
		return nil
	}
	// Settle the cycle's index writes first, so every page that holds a
	// document says so. An index that cannot take them now (an outage the
	// crawl's own flush will wait out) postpones orphans to the next
	// discovery rather than holding the cycle twice as long.
	flushCtx, cancel := context.WithTimeout(ctx, orphanFlushWait)
	err := c.writes.settle(flushCtx)
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		c.log.Warn("orphans not decided: index writes not settled", "err", err)
		return nil
	}
	decide := make(map[string]*source, len(discover))
	for _, src := range discover {
		decide[src.cfg.Name] = src
	}
	roots := c.orphanRoots()
	verdict, before, err := c.orphanVerdicts(roots)
	if err != nil {
		return err
	}
	last, err := c.front.GetMeta(metaOrphansNone)
	if err != nil {
		return err
	}
	if before != nil && bytes.Equal(last, before) {
		// What the walk reads is as it was when the last one found
		// nothing: this one would find nothing too. At a million pages
		// the walk is the cycle's last 9 seconds.
		c.log.Debug("orphans: none, nothing the walk reads changed since the last one found none")
		for _, src := range discover {
			c.reportNow().orphans(src.cfg.Name, 0, 0)
		}
		return c.front.PutMeta(metaOrphansNone, verdict)
	}
	s, err := c.scanOrphans(decide, roots)
	if err != nil {
		return err
	}
	if verdict != nil && s.none() {
		if err := c.front.PutMeta(metaOrphansNone, verdict); err != nil {
			return err
		}
	}
	queued := false
	if len(s.linked) > 0 {
		if _, err := c.front.Orphans(s.linked, frontier.OrphanLinked); err != nil {
			return err
		}
	}
	if len(s.revive) > 0 {
		back, err := c.front.Orphans(s.revive, frontier.OrphanRevive)
		if err != nil {
			return err
		}
		queued = queued || len(back) > 0
	}
	report := c.reportNow()
	if s.undecided != "" {
		c.log.Info("orphans not decided", "reason", s.undecided)
		var strict []string
		for _, src := range discover {
			if src.cfg.Orphans == orphansRecheck || src.cfg.Orphans == orphansDelete {
				strict = append(strict, src.cfg.Name)
			}
		}
		if len(strict) > 0 {
			report.Warn(fmt.Sprintf("orphans not decided for %s: %s", strings.Join(strict, ", "), s.undecided))
		}
	} else {
		agreed := map[string][]frontier.Record{}
		for _, r := range s.agreed {
			agreed[r.Source] = append(agreed[r.Source], r)
		}
		for _, recs := range agreed {
			if _, err := c.releaseHeld(ctx, recs, whyDecidedAgain); err != nil {
				return err
			}
		}
		for _, src := range discover {
			urls := s.found[src.cfg.Name]
			if len(urls) == 0 {
				continue
			}
			var err error
			switch src.cfg.Orphans {
			case orphansDelete:
				err = c.deleteOrphans(ctx, src, urls)
			case orphansRecheck:
				var n int
				n, err = c.recheckOrphans(urls)
				queued = queued || n > 0
			default:
				err = c.keepOrphans(urls)
			}
			if err != nil {
				return err
			}
		}
	}
	if queued {
		if err := c.work(ctx, listNothing); err != nil {
			return err
		}
	}
	if s.undecided != "" {
		return nil
	}
	for _, src := range discover {
		urls := s.found[src.cfg.Name]
		kept, err := c.stillIndexed(urls)
		if err != nil {
			return err
		}
		report.orphans(src.cfg.Name, len(urls), kept)
		if len(urls) > 0 {
			c.log.Info("orphans found", "source", src.cfg.Name, "orphans", len(urls), "kept", kept, "policy", src.cfg.Orphans)
		}
	}
	return nil
}

// scanOrphans walks the stored links from every source's roots, then every
// record: which pages of the sources in decide are orphans, and which
// marked pages are linked again.
func (c *Crawler) scanOrphans(decide map[string]*source, roots []uint64) (*orphanScan, error) {
	s := &orphanScan{found: map[string][]string{}}
	for _, src := range c.order {
		for _, u := range src.rules.StartURLs() {
			if why, err := c.unread(u); err != nil || why != "" {
				s.undecided = why
				return s, err
			}
		}
	}
	reached, err := c.front.Reach(roots)
	if err != nil {
		return nil, err
	}
	unknown, example := 0, ""
	err = frontier.ForEach(c.front, frontier.Query{}, func(r frontier.Record) error {
		if r.State == frontier.Waiting || r.State == frontier.InFlight {
			s.unsettled++
		}
		in := reached.Has(r.URL)
		if !in {
			if r.Pending == frontier.PendingHeld && r.Orphan && r.State == frontier.Excluded &&
				decide[r.Source] != nil && decide[r.Source].cfg.Orphans == orphansDelete {
				s.agreed = append(s.agreed, r)
			}
			if holdsDocument(&r) && c.sources[r.Source] != nil {
				s.unreached++
				if decide[r.Source] != nil {
					s.found[r.Source] = append(s.found[r.Source], r.URL)
				}
			}
			return nil
		}
		if !r.HasLinks && r.State != frontier.Excluded {
			// An excluded page is not crawled, so it links nothing the
			// crawl follows; any other page's links are unknown.
			if unknown++; example == "" {
				example = fmt.Sprintf("%s (%s %s)", r.URL, r.State, r.Reason)
			}
		}
		if r.Orphan && r.State == frontier.Fetched {
			s.linked = append(s.linked, r.URL)
		}
		if r.Orphan && r.State == frontier.Excluded {
			s.revive = append(s.revive, r.URL)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if unknown > 0 {
		s.undecided = fmt.Sprintf("the links of %d page(s) reached were never read, such as %s", unknown, strings.TrimSpace(example))
	}
	return s, nil
}

// orphanRoots are the walk's roots: every source's start URLs and the key
// of the URLs its sitemaps and feeds list.
func (c *Crawler) orphanRoots() []uint64 {
	var roots []uint64
	for _, src := range c.order {
		for _, u := range src.rules.StartURLs() {
			roots = append(roots, frontier.LinkKey(u))
		}
		roots = append(roots, frontier.LinkKey(listedKey(src.cfg.Name)))
	}
	return roots
}

// An orphan verdict names what a walk read when it started: the cycle, the
// store's reach generation (frontier.ReachGeneration) and a hash of the
// roots. Stored (metaOrphansNone) when the walk found nothing, it lets the
// next cycle skip a walk that would find nothing again.
//
// The verdict holds only in the cycle right after the one it names: a
// binary from before the reach generation changes links and records
// without counting them, and would begin a cycle of its own in between.

// orphanVerdicts are the verdict of a walk that starts now over roots and
// the one a walk in the cycle before would have left if nothing it reads
// changed since; nil when the store does not count its changes.
func (c *Crawler) orphanVerdicts(roots []uint64) (now, before []byte, err error) {
	counter, ok := c.front.(frontier.ReachCounter)
	if !ok {
		return nil, nil, nil
	}
	gen, err := counter.ReachGeneration()
	if err != nil {
		return nil, nil, err
	}
	h := fnv.New64a()
	var b [8]byte
	for _, r := range slices.Sorted(slices.Values(roots)) {
		binary.BigEndian.PutUint64(b[:], r)
		h.Write(b[:])
	}
	cycle := c.front.Cycle()
	now = fmt.Appendf(nil, "%d %d %x", cycle, gen, h.Sum64())
	if cycle > 0 {
		before = fmt.Appendf(nil, "%d %d %x", cycle-1, gen, h.Sum64())
	}
	return now, before, nil
}

// unread says why a start URL was not read in its last visit, following
// its redirects; empty when it was.
func (c *Crawler) unread(u string) (string, error) {
	start := u
	for range c.cfg.Fetch.MaxRedirects + 1 {
		r, ok, err := c.front.Get(u)
		if err != nil {
			return "", err
		}
		if !ok {
			return fmt.Sprintf("start URL %s was never fetched", start), nil
		}
		if r.State != frontier.Fetched {
			return strings.TrimSpace(fmt.Sprintf("start URL %s was not read (%s %s)", u, r.State, r.Reason)), nil
		}
		if r.Status < 300 || r.Status >= 400 || r.Status == http.StatusNotModified || r.Target == "" {
			return "", nil
		}
		u = r.Target
	}
	return fmt.Sprintf("start URL %s redirects more than fetch.max_redirects times", start), nil
}

// holdsDocument is what makes a page an orphan candidate, checked again
// when it is changed: the walk and the change are not one transaction.
func holdsDocument(r *frontier.Record) bool {
	return r.State == frontier.Fetched && r.Indexed && r.Pending == ""
}

// keepOrphans marks the orphans, with an event the first time.
func (c *Crawler) keepOrphans(urls []string) error {
	_, err := c.front.Orphans(urls, frontier.OrphanKeep)
	return err
}

// recheckOrphans queues the orphans not fetched in this cycle yet for a
// conditional GET in it; those fetched already are known to be there. It
// returns how many it queued.
func (c *Crawler) recheckOrphans(urls []string) (int, error) {
	changed, err := c.front.Orphans(urls, frontier.OrphanRecheck)
	n := 0
	for i := range changed {
		if changed[i].State == frontier.Waiting {
			n++
		}
	}
	return n, err
}

// deleteOrphans excludes the orphans with reason "orphan" and deletes their
// documents through the pending writes, like any other deletion: held
// back until the end of the cycle when the source is guarded.
func (c *Crawler) deleteOrphans(ctx context.Context, src *source, urls []string) error {
	change := frontier.OrphanDelete
	if c.guarded(src.cfg.Name) {
		change = frontier.OrphanHold
	}
	changed, err := c.front.Orphans(urls, change)
	if len(changed) > 0 {
		c.reportNow().ReasonN(src.cfg.Name, changed[0].URL, reasonOrphan, "", len(changed))
	}
	for i := range changed {
		r := &changed[i]
		c.log.Info("orphan deleted", "url", r.URL, "source", r.Source, "reason", reasonOrphan)
		if change == frontier.OrphanHold {
			continue // judgeDeletes sends it, or holds it
		}
		if derr := c.writes.sendCtx(ctx, deletion(*r)); derr != nil {
			// The deletion stays pending and is sent again by the next cycle.
			c.log.Warn("sink write failed", "url", r.URL, "source", r.Source, "reason", reasonOrphan, "delete", true, "err", derr)
		}
	}
	return err
}

// stillIndexed counts the URLs that still hold a document or have one on
// its way.
func (c *Crawler) stillIndexed(urls []string) (int, error) {
	n := 0
	for _, u := range urls {
		r, ok, err := c.front.Get(u)
		if err != nil {
			return n, err
		}
		if ok && r.State == frontier.Fetched && (r.Indexed || r.Pending == pendingIndex) {
			n++
		}
	}
	return n, nil
}
