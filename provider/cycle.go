package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
)

// cycles is what the crawler keeps of its cycles: the report of the one
// running, or of the last, the observer each report counts to, and the
// cycle last begun or resumed here. The cycle's run (Crawl, cycle, work
// and the start steps below) stays on Crawler: it drives the crawler's
// sources, state store, sink and writes, every part the crawler holds.
type cycles struct {
	// report is replaced when a cycle starts while the sink's
	// acknowledgements of the last may still arrive and the status page
	// reads it: it is only ever loaded and stored whole (current).
	report atomic.Pointer[Report]
	// mu guards the observer each new report takes.
	mu       sync.Mutex
	observer Observer // set by SetObserver
	// ran is the cycle last begun or resumed here.
	ran atomic.Uint64
	// meta is the state store, which numbers the cycles and records the
	// last one done; set once opened.
	meta frontier.Meta
	// now is the crawler's clock, which each report reads.
	now func() time.Time
}

// current is the report of the cycle running, or of the last one.
func (cy *cycles) current() *Report { return cy.report.Load() }

// newReport starts the report of a cycle writing to target, counting to
// the observer.
func (cy *cycles) newReport(target string) *Report {
	report := newReport(target, cy.now)
	cy.mu.Lock()
	report.obs = cy.observer
	cy.report.Store(report)
	cy.mu.Unlock()
	return report
}

// observe makes o see every count from now on, the current report's too.
func (cy *cycles) observe(o Observer) {
	cy.mu.Lock()
	cy.observer = o
	cy.current().obs = o
	cy.mu.Unlock()
}

// observed is the observer and the current report.
func (cy *cycles) observed() (Observer, *Report) {
	cy.mu.Lock()
	defer cy.mu.Unlock()
	return cy.observer, cy.current()
}

// beginOrResume starts a new cycle, unless the last one ended before
// everything it queued was fetched (a kill, a stop): that one is resumed,
// since a new cycle would queue the start URLs again and fetch pages the
// interrupted one had already done.
func (cy *cycles) beginOrResume() (cycle uint64, resumed bool, err error) {
	if cur := cy.meta.Cycle(); cur > 0 {
		done, err := cy.meta.GetMeta(metaCycleDone)
		if err != nil {
			return 0, false, err
		}
		if string(done) != strconv.FormatUint(cur, 10) {
			cy.ran.Store(cur)
			return cur, true, nil
		}
	}
	if cycle, err = cy.meta.BeginCycle(); err == nil {
		cy.ran.Store(cycle)
	}
	return cycle, false, err
}

// done records that the cycle fetched everything it queued: the next
// start begins a new one.
func (cy *cycles) done(cycle uint64) error {
	return cy.meta.PutMeta(metaCycleDone, strconv.AppendUint(nil, cycle, 10))
}

// Crawl runs one cycle of every source: writes left pending by an earlier
// run resent, reject lists reloaded, the crawl space re-applied to known
// URLs when the configuration changed, start URLs, sitemaps and feeds
// queued, aged checks that are due queued, then every queued URL fetched
// until nothing is waiting. A cycle that was interrupted resumes from the
// state store. When the cycle completes, its writes are published (for
// Elasticsearch: the alias moves to the physical index written).
func (c *Crawler) Crawl(ctx context.Context) (*Report, error) {
	return c.crawl(ctx, c.order)
}

// CrawlDue runs one cycle in which only the sources whose
// discovery_interval has passed since their last discovery revisit their
// start URLs, sitemaps and feeds; the aged checks that are due run for every
// source. It returns when the next source's discovery is due.
func (c *Crawler) CrawlDue(ctx context.Context, now time.Time) (*Report, time.Time, error) {
	if _, err := c.applyPaused(); err != nil {
		return nil, now, err
	}
	var due []*source
	next := time.Time{}
	// A paused source's discovery waits for it to resume, and does not
	// make the service wake for it.
	for _, src := range c.active(c.order) {
		at, err := NextDiscovery(c.front, src.cfg)
		if err != nil {
			return nil, now, err
		}
		if !at.After(now) {
			due = append(due, src)
			at = now.Add(src.cfg.DiscoveryInterval.D())
		}
		if next.IsZero() || at.Before(next) {
			next = at
		}
	}
	report, err := c.crawl(ctx, due)
	return report, next, err
}

func (c *Crawler) crawl(ctx context.Context, discover []*source) (*Report, error) {
	report := c.cycles.newReport(c.sink.Target())
	c.writes.begin(ctx)
	if _, err := c.applyPaused(); err != nil {
		report.Finish(err)
		return report, err
	}
	c.warnings(report)
	if c.cluster != nil {
		// An attempt its store failed (the state's cluster unreachable past
		// its retries) is followed by another: this one.
		c.cluster.Recover()
	}
	c.announceHeld(report)
	err := c.cycle(ctx, discover)
	// Searches see the cycle only once every write of it has landed; a
	// stop or an outage that outlasts flushWait ends it unpublished, its
	// writes pending for the next one.
	// The cycle's writes are recorded before it counts as done.
	flushCtx, cancel := context.WithTimeout(ctx, c.timing.flushWait)
	defer cancel()
	if ferr := c.writes.settle(flushCtx); ferr != nil && err == nil {
		err = fmt.Errorf("sink: %w; the index is not published", ferr)
	}
	if err == nil {
		err = c.publish(ctx)
	}
	report.Finish(err)
	return report, err
}

func (c *Crawler) cycle(ctx context.Context, discover []*source) error {
	cycle, resumed, err := c.cycles.beginOrResume()
	if err != nil {
		return err
	}
	c.log.Debug("cycle starts", "cycle", cycle, "resumed", resumed)
	// The cycle's start, in this order; a step that fails ends the cycle.
	start := []func() error{c.rebuildIfNewTarget, c.reapplyIfChanged, c.rereadIfRenderChanged,
		func() error { return c.writes.resume(ctx) }}
	if !resumed {
		start = append(start, c.recheckHeld)
	}
	for _, step := range append(start, c.checkpoint, c.polite.forget) {
		if err := step(); err != nil {
			return err
		}
	}
	// A paused source fetches nothing: not its robots.txt, not its start
	// URLs, sitemaps or feeds; its aged checks wait for it to resume.
	discover = c.active(discover)
	for _, src := range c.active(c.order) {
		// A source that could not sign in last cycle tries once more.
		src.fetch.ResetAuth()
		c.signInWarned.forget(src.cfg.Name)
		c.learnCrawlDelays(ctx, src)
	}
	now := c.now()
	for _, src := range c.active(c.order) {
		if src.cfg.MaxAge > 0 {
			if _, err := c.front.RequeueDue(src.cfg.Name, now.Add(-src.cfg.MaxAge.D())); err != nil {
				return err
			}
		}
	}
	for _, src := range discover {
		if err := c.queueStart(src); err != nil {
			return err
		}
	}
	// The start URLs are fetched while the sitemaps and feeds are read:
	// however many files those are, they keep no start URL waiting.
	list := func(ctx context.Context, queued func()) error {
		for _, src := range discover {
			c.discoverListed(ctx, src, queued)
			stamp, _ := now.MarshalText()
			if err := c.front.PutMeta(metaDiscovered+src.cfg.Name, stamp); err != nil {
				return err
			}
		}
		return nil
	}
	if err := c.work(ctx, list); err != nil {
		return err
	}
	c.rewriteGroups(ctx, true)
	if err := c.orphans(ctx, discover); err != nil {
		return err
	}
	if err := c.judgeDeletes(ctx); err != nil {
		return err
	}
	return c.cycles.done(cycle)
}

// rebuildIfNewTarget starts a rebuild when documents go somewhere new: a new
// physical index (a changed mapping version or extra fields) or another
// sink. Every URL holding a document is queued to be fetched and written
// again; the new target is published only when that cycle completes, so
// searches never see a half-built index.
func (c *Crawler) rebuildIfNewTarget() error {
	last, building, err := Targets(c.front)
	if err != nil {
		return err
	}
	target := c.sink.Target()
	if last == target {
		return nil
	}
	if building == target {
		// This rebuild was started by a run that did not finish it: what
		// it queued is still queued, and what it wrote is written.
		if last != "" {
			c.reportNow().Warn(fmt.Sprintf("rebuilding %s (started by an earlier run); searches see %s until it is done", target, last))
		}
		return nil
	}
	n, err := c.front.RequeueIndexed()
	if err != nil {
		return err
	}
	if n > 0 {
		c.log.Info("documents go to a new target: rebuilding it from the known URLs", "target", target, "previous", last, "urls", n)
		// Said in the report too: with embeddings every passage whose text
		// or model changed is embedded again, which a user pays for.
		c.reportNow().Warn(fmt.Sprintf("rebuilding %s: its %d documents are written again (and their passages embedded again where their text or model changed); searches see %s until it is done", target, n, last))
	}
	return c.front.PutMeta(metaBuilding, []byte(target))
}

// Targets reads from a state store the sink target last published and the
// one whose rebuild was started ("" for none).
func Targets(front frontier.Meta) (published, building string, err error) {
	p, err := front.GetMeta(metaTarget)
	if err != nil {
		return "", "", err
	}
	b, err := front.GetMeta(metaBuilding)
	return string(p), string(b), err
}

// reapplyIfChanged re-decides every known URL when a source's effective
// configuration changed since it was last applied: documents that no
// longer belong are deleted, newly allowed URLs are queued.
func (c *Crawler) reapplyIfChanged() error {
	changed := false
	for _, src := range c.order {
		old, err := c.front.GetMeta(metaFingerprint + src.cfg.Name)
		if err != nil {
			return err
		}
		if string(old) != config.Fingerprint(src.cfg) {
			changed = changed || old != nil
		}
	}
	if changed {
		if err := c.Reapply(); err != nil {
			return err
		}
	}
	for _, src := range c.order {
		if err := c.front.PutMeta(metaFingerprint+src.cfg.Name, []byte(config.Fingerprint(src.cfg))); err != nil {
			return err
		}
	}
	return nil
}

// rereadIfRenderChanged queues again, to be read whole and written whatever
// they hold, the indexed pages of a source whose rendering changed since it
// was last applied. The aged check alone would not do: a single-page app's
// shell seldom changes, so its 304 would keep the empty shell indexed after
// rendering was turned on, or the rendered DOM after it was turned off.
// When the source rendered nothing before, only the pages it now renders
// are read again; otherwise every indexed page of the source, since which
// ones were rendered is not recorded. Pages are rendered as they are read,
// so the cost is one reading of those pages, once.
func (c *Crawler) rereadIfRenderChanged() error {
	for _, src := range c.order {
		key := metaRender + src.cfg.Name
		old, err := c.front.GetMeta(key)
		if err != nil {
			return err
		}
		now := config.RenderFingerprint(src.cfg)
		if string(old) == now {
			continue
		}
		var urls []string
		err = frontier.ForEach(c.front, frontier.Query{Source: src.cfg.Name}, func(r frontier.Record) error {
			if r.State == frontier.Fetched && r.Indexed && (len(old) > 0 || src.rules.Render(r.URL) != nil) {
				urls = append(urls, r.URL)
			}
			return nil
		})
		if err != nil {
			return err
		}
		for batch := range slices.Chunk(urls, 4096) {
			if err := c.front.Refetch(batch); err != nil {
				return err
			}
		}
		if len(urls) > 0 {
			c.log.Info("rendering changed: indexed pages are read again", "source", src.cfg.Name, "urls", len(urls))
		}
		if err := c.front.PutMeta(key, []byte(now)); err != nil {
			return err
		}
	}
	return nil
}

// publish makes the cycle's writes visible and records the target published.
func (c *Crawler) publish(ctx context.Context) error {
	if err := c.sink.Publish(ctx); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return c.front.PutMeta(metaTarget, []byte(c.sink.Target()))
}

func (c *Crawler) queueStart(src *source) error {
	items := make([]frontier.Item, 0, len(src.cfg.StartURLs))
	for i, key := range src.rules.StartURLs() {
		d := src.rules.Decide(key, 0)
		items = append(items, queueItem(src.cfg.Name, key, src.rules.StartFound(i), 0, frontier.Start, d.Priority))
	}
	_, err := c.front.Add(items...)
	return err
}

// work runs the worker pool until the cycle is done or ctx ends, with list
// reading the sitemaps and feeds beside it: the cycle is done only when
// list has returned and nothing is waiting or in flight. list calls queued
// after it queued URLs, so that workers idle for want of URLs look again.
func (c *Crawler) work(ctx context.Context, list func(ctx context.Context, queued func()) error) error {
	workers := max(c.cfg.Fetch.Concurrency, 1)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, workers+1)
	more := newListingState()
	var wg sync.WaitGroup
	wg.Go(func() {
		err := list(ctx, more.poke)
		more.end()
		if err != nil {
			errs <- err
			cancel()
		}
	})
	for range workers {
		wg.Go(func() {
			for {
				wake := more.wait()
				lease, err := c.front.Next(ctx)
				if errors.Is(err, frontier.ErrDone) && wake != nil {
					// Nothing is waiting, but the sitemaps may list more.
					select {
					case <-wake:
						continue
					case <-ctx.Done():
						return
					}
				}
				if err != nil {
					if !errors.Is(err, frontier.ErrDone) {
						errs <- err
					}
					cancel()
					return
				}
				c.process(ctx, lease)
			}
		})
	}
	wg.Go(func() {
		t := time.NewTicker(c.timing.checkpoint)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.checkpoint(); err != nil {
					c.log.Warn("checkpoint failed", "err", err)
				}
			case <-c.unsettled.full:
				c.rewriteGroups(ctx, false)
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if !errors.Is(err, context.Canceled) {
			return err
		}
	}
	return parent.Err()
}

// listNothing is work's list when no sitemap is to be read.
func listNothing(context.Context, func()) error { return nil }

// listingState tells the workers idle for want of URLs when the sitemaps
// being read queued more, or are all read.
type listingState struct {
	mu    sync.Mutex
	ch    chan struct{} // closed by the next poke or end
	ended bool
}

func newListingState() *listingState { return &listingState{ch: make(chan struct{})} }

// wait is a channel closed when URLs are queued or the reading ends; nil
// once it has ended. Taken before Next, it misses nothing queued after.
func (s *listingState) wait() <-chan struct{} {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.ended {
		return nil
	}
	return s.ch
}

func (s *listingState) poke() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		close(s.ch)
		s.ch = make(chan struct{})
	}
}

func (s *listingState) end() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.ended {
		s.ended = true
		close(s.ch)
	}
}
