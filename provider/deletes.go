package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// The delete guard (sources[].hold_deletes), as Algolia's crawler has its
// maxLostRecordsPercentage: a cycle that would delete more than a share of
// a source's documents holds those deletes, for a site answering 404
// everywhere, robots.txt suddenly disallowing all, a lost login or a
// config change that excludes most of a source are not reasons to empty
// the index.
//
// A delete of a guarded source is decided as ever, with its outcome, but
// recorded held back (frontier.PendingHold) instead of being sent; its
// document stays searchable. At the end of the cycle (judgeDeletes) the
// source's held deletes are counted against its documents: within its
// hold_deletes they are sent, over it they stay held (PendingHeld), said
// in the log, the report, the metrics, status and the status page
// (metaHeld). The next cycle visits their URLs again (recheckHeld): a
// delete decided again there is sent at once (holdDelete), a page that is
// back is indexed again, and an orphan still unreached at the end of the
// next walk is deleted (orphans.go). ConfirmDeletes sends them at once.
// Everything held lives in the state store, so a restart loses nothing.

// metaHeld + source name holds what the guard holds for the source, as
// the cycle that held it left it (HeldDeletes, in JSON).
const metaHeld = "deletes_held/"

// HeldDeletes is what a source's delete guard holds.
type HeldDeletes struct {
	// Count is the deletes held, Documents the source's documents they
	// were counted against (the held ones included).
	Count     int `json:"count"`
	Documents int `json:"documents"`
	// Percent and MinCount are the source's hold_deletes then.
	Percent  int   `json:"percent"`
	MinCount int64 `json:"min_count"`
	// Cycle is the cycle whose end last held them; Since when they were
	// first held, as long as some have been held at every cycle's end.
	Cycle uint64    `json:"cycle"`
	Since time.Time `json:"since"`
	// Example is one URL whose delete is held.
	Example string `json:"example"`
}

// Share is Count in percent of Documents.
func (h *HeldDeletes) Share() int {
	if h.Documents <= 0 {
		return 100
	}
	return h.Count * 100 / h.Documents
}

// ReadHeldDeletes reads from a state store what the delete guard holds
// for source: nil when it holds nothing.
func ReadHeldDeletes(m frontier.Meta, source string) (*HeldDeletes, error) {
	raw, err := m.GetMeta(metaHeld + source)
	if err != nil || raw == nil {
		return nil, err
	}
	var h HeldDeletes
	if err := json.Unmarshal(raw, &h); err != nil {
		return nil, fmt.Errorf("held deletes of source %s: %w", source, err)
	}
	return &h, nil
}

// HeldDeletes is what the delete guard holds for source (nil: nothing),
// for the status page.
func (c *Crawler) HeldDeletes(source string) (*HeldDeletes, error) {
	return ReadHeldDeletes(c.front, source)
}

// guarded says whether the deletes of source wait for its guard: a source
// no longer configured has none, and hold_deletes.percent 100 turns it off.
func (c *Crawler) guarded(source string) bool {
	src := c.sources[source]
	return src != nil && src.cfg.HoldDeletes.Percent < 100
}

// holdDelete decides what becomes of w, decided with an outcome of the URL
// whose record is rec: a delete of a guarded source is held back until the
// end of the cycle, unless the guard held it already at the end of an
// earlier one, when deciding it again is what releases it.
func (c *Crawler) holdDelete(w *write, rec frontier.Record) {
	if !w.del || !c.guarded(w.source) {
		return
	}
	if rec.Pending == frontier.PendingHeld {
		w.why = whyDecidedAgain
		return
	}
	w.hold = true
}

// Why a held delete is sent, in its history (write_sent's detail).
const (
	whyDecidedAgain = "decided again after it was held"
	whyWithin       = "the cycle's deletes were within hold_deletes"
	whyConfirmed    = "confirmed by an operator"
	whyUnguarded    = "its source is no longer guarded"
)

// judgeDeletes ends a cycle's deletes: each source's held ones are sent
// when they are within its hold_deletes, and held otherwise. Those of a
// source no longer configured are sent.
func (c *Crawler) judgeDeletes(ctx context.Context) error {
	recs, err := c.front.Held("")
	if err != nil {
		return err
	}
	bySource := map[string][]frontier.Record{}
	for _, r := range recs {
		bySource[r.Source] = append(bySource[r.Source], r)
	}
	for _, src := range c.order {
		held := bySource[src.cfg.Name]
		delete(bySource, src.cfg.Name)
		if err := c.judgeSource(ctx, src, held); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(bySource)) {
		if _, err := c.releaseHeld(ctx, bySource[name], whyUnguarded); err != nil {
			return err
		}
	}
	return nil
}

// judgeSource sends or holds the held deletes of one source.
func (c *Crawler) judgeSource(ctx context.Context, src *source, held []frontier.Record) error {
	name, hd := src.cfg.Name, src.cfg.HoldDeletes
	report := c.reportNow()
	if len(held) == 0 {
		report.deletesHeld(name, 0)
		return c.clearHeld(name)
	}
	docs, over, err := c.overShare(src, len(held))
	if err != nil {
		return err
	}
	if !over {
		report.deletesHeld(name, 0)
		if _, err := c.releaseHeld(ctx, held, whyWithin); err != nil {
			return err
		}
		return c.clearHeld(name)
	}
	h := &HeldDeletes{Count: len(held), Documents: docs, Percent: hd.Percent, MinCount: hd.MinCount,
		Cycle: c.front.Cycle(), Since: c.now().UTC(), Example: held[0].URL}
	if last, err := ReadHeldDeletes(c.front, name); err == nil && last != nil {
		h.Since = last.Since
	}
	why := fmt.Sprintf("the cycle would delete %d of the source's %d documents (%d%%, more than hold_deletes.percent %d and min_count %d)",
		h.Count, h.Documents, h.Share(), hd.Percent, hd.MinCount)
	var urls []string
	for _, r := range held {
		if r.Pending == frontier.PendingHold {
			urls = append(urls, r.URL)
		}
	}
	if _, err := c.front.MoveHeld(urls, frontier.PendingHeld,
		frontier.Event{Kind: frontier.EventDeleteHeld, Reason: frontier.PendingHeld, Detail: why}); err != nil {
		return err
	}
	raw, err := json.Marshal(h)
	if err != nil {
		return err
	}
	if err := c.front.PutMeta(metaHeld+name, raw); err != nil {
		return err
	}
	c.log.Warn("deletes held: the cycle would delete too large a share of the source's documents",
		"source", name, "held", h.Count, "documents", h.Documents, "percent", h.Share(),
		"limit_percent", hd.Percent, "min_count", hd.MinCount, "example", h.Example)
	report.deletesHeld(name, h.Count)
	report.Warn(fmt.Sprintf("source %s: %d deletes held: %s; their documents stay in the index until the next cycle decides them again, or `crawlspace confirm-deletes -config F -source %s` sends them now (such as %s)",
		name, h.Count, why, name, h.Example))
	return nil
}

// clearHeld forgets what status shows held for source, if anything: a
// write only when there is something to forget.
func (c *Crawler) clearHeld(source string) error {
	raw, err := c.front.GetMeta(metaHeld + source)
	if err != nil || raw == nil {
		return err
	}
	return c.front.PutMeta(metaHeld+source, nil)
}

// overShare says whether n deletes are more than the source's hold_deletes
// allow, and the source's documents it counted (those whose document is
// in the index or on its way, the held ones included). The documents are
// counted only as far as the answer needs, so a source with a few
// deletes and many documents is not walked whole.
func (c *Crawler) overShare(src *source, n int) (docs int, over bool, err error) {
	hd := src.cfg.HoldDeletes
	if hd.Percent >= 100 || int64(n) <= hd.MinCount {
		return 0, false, nil
	}
	enough := errors.New("enough documents counted")
	err = frontier.ForEach(c.front, frontier.Query{Source: src.cfg.Name}, func(r frontier.Record) error {
		if r.Indexed || r.Pending == frontier.PendingIndex || frontier.HeldDelete(r.Pending) {
			docs++
		}
		if hd.Percent > 0 && docs*hd.Percent >= n*100 {
			return enough
		}
		return nil
	})
	if err != nil && !errors.Is(err, enough) {
		return 0, false, err
	}
	return docs, docs*hd.Percent < n*100, nil
}

// releaseHeld sends the held deletes of recs, why going to each URL's
// history, and returns how many it sent. A delete the sink does not take
// now stays pending and is sent again by the next start.
func (c *Crawler) releaseHeld(ctx context.Context, recs []frontier.Record, why string) (int, error) {
	if len(recs) == 0 {
		return 0, nil
	}
	urls := make([]string, len(recs))
	for i := range recs {
		urls[i] = recs[i].URL
	}
	moved, err := c.front.MoveHeld(urls, frontier.PendingDelete,
		frontier.Event{Kind: frontier.EventWriteSent, Reason: frontier.PendingDelete, Detail: why})
	for _, r := range moved {
		if serr := c.writes.sendCtx(ctx, deletion(r)); serr != nil {
			c.log.Warn("sink write failed", "url", r.URL, "source", r.Source, "delete", true, "err", serr)
		}
	}
	if len(moved) > 0 {
		c.log.Info("held deletes sent", "source", moved[0].Source, "count", len(moved), "why", why)
	}
	return len(moved), err
}

// recheckHeld queues again, at the start of a new cycle, the URLs whose
// delete the guard held at the end of an earlier one, so that this cycle
// decides each again: a delete decided again is sent, a page that is back
// is indexed again. An orphan is decided again by the walk at the cycle's
// end, not by a fetch, which would find it served.
func (c *Crawler) recheckHeld() error {
	recs, err := c.front.Held("")
	if err != nil {
		return err
	}
	var urls []string
	for _, r := range recs {
		if r.Pending == frontier.PendingHeld && !(r.State == frontier.Excluded && r.Orphan) {
			urls = append(urls, r.URL)
		}
	}
	for batch := range slices.Chunk(urls, 4096) {
		if err := c.front.Refetch(batch); err != nil {
			return err
		}
	}
	if len(urls) > 0 {
		c.log.Info("held deletes: their URLs are visited again to decide them", "urls", len(urls))
	}
	return nil
}

// ConfirmDeletes sends at once the deletes the guard holds for source, on
// an operator's word that what the source lost is gone (crawlspace
// confirm-deletes, the control API), and waits, within ctx, for them to
// land. Deletes still waiting for the end of their own cycle are not
// held yet, and left to it. It returns how many it sent.
func (c *Crawler) ConfirmDeletes(ctx context.Context, source string) (int, error) {
	if _, err := c.source(source); err != nil {
		return 0, err
	}
	recs, err := c.front.Held(source)
	if err != nil {
		return 0, err
	}
	recs = slices.DeleteFunc(recs, func(r frontier.Record) bool { return r.Pending != frontier.PendingHeld })
	n, err := c.releaseHeld(ctx, recs, whyConfirmed)
	if err != nil {
		return n, err
	}
	if err := c.clearHeld(source); err != nil {
		return n, err
	}
	if o, _ := c.cycles.observed(); o != nil {
		o.DeletesHeld(source, 0)
	}
	ctx, cancel := context.WithTimeout(ctx, c.timing.flushWait)
	defer cancel()
	if err := c.writes.settle(ctx); err != nil {
		return n, fmt.Errorf("sink: %w; the deletes not landed stay pending and are sent again by the next start", err)
	}
	return n, nil
}

// announceHeld tells the observer, as a cycle starts, what the guard holds
// for each source since the last cycle (or the last run) ended.
func (c *Crawler) announceHeld(report *Report) {
	if report.obs == nil {
		return
	}
	for _, src := range c.order {
		n := 0
		if h, err := ReadHeldDeletes(c.front, src.cfg.Name); err == nil && h != nil {
			n = h.Count
		}
		report.obs.DeletesHeld(src.cfg.Name, n)
	}
}
