// Package provider is the web provider: it crawls each configured source
// with colly, keeps to the crawl space the rules draw, turns pages into
// documents through mapping and hands them to a sink, with every URL's state
// kept in the persistent frontier.
//
// Concurrency is bounded by a fixed pool of workers, each calling colly
// synchronously for one frontier lease at a time; colly's own Async mode
// would start a goroutine per request with no bound on how many wait.
package provider

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/render"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// Crawler runs crawl cycles over every source of one configuration.
type Crawler struct {
	cfg   *config.Config
	rules *rules.Set
	// front is the state store as the crawl uses it; bolt is the same
	// store, opened and closed here.
	front frontier.Store
	bolt  *frontier.Frontier
	// cluster is the store when it is shared in Elasticsearch (bolt is
	// nil then), and store the one opened, closed with the crawler.
	cluster *esfrontier.Store
	store   io.Closer
	sink    sink.Sink
	// groupLocks serialise duplicates' decisions (duplicates.go), and
	// unsettled holds the groups whose document is rewritten from the
	// store at the end of the cycle.
	groupLocks groupLocks
	unsettled  *unsettledGroups
	// formats are the formats read, and readers the readers of the
	// document formats among them, shared by the sources.
	formats []Format
	readers readers
	// writes owns the document writes between the store and the sink.
	writes *writer
	// cycles is what the crawler keeps of its cycles (cycle.go).
	cycles cycles

	closeOnce sync.Once
	closeErr  error
	log       *slog.Logger
	sources   map[string]*source
	order     []*source // config order
	robots    *robots.Cache
	agent     string // robots.txt product token

	// polite is what the hosts' robots.txt taught of their politeness
	// (politeness.go).
	polite *politeness
	// signInWarned holds the sign-in failures of this cycle already
	// logged, by source: one error line per failure, not one per page.
	signInWarned lastSaid
	// sharedSitemaps holds, per start host, the sitemaps its robots.txt
	// named as this process last kept them in a cluster's state.
	sharedSitemaps lastSaid
	// fetchers is the fetch layer of every source, in config order.
	fetchers fetch.Set
	// browser renders pages for the sources and crawl rules that ask for
	// it; nil when none does. It starts Chromium at the first such page.
	browser *render.Browser
	// timing holds the crawler's waits; a crawler of its own lets a test
	// shorten them without slowing or racing another test.
	timing timing
	// clock is the crawler's time, which its state store, robots cache,
	// fetch layers and reports read too (now): time.Now, unless a test
	// moves it (export_test.go). It is held atomically because the store's
	// goroutines read it from the store's opening on.
	clock atomic.Pointer[func() time.Time]
	// maintain is set on a crawler that crawls nothing (NewMaintenance).
	maintain bool
	// paused are the paused sources as last read from the store
	// (control.go).
	pausedMu sync.Mutex
	paused   map[string]Pause
}

// SinkOpener opens the sink documents go to; onResult must receive every
// outcome the sink reports.
type SinkOpener func(onResult func(sink.Result)) (sink.Sink, error)

// New prepares a crawler: it opens the state store under cfg.StateDir and
// the sink. Close releases both.
func New(cfg *config.Config, set *rules.Set, open SinkOpener, log *slog.Logger) (*Crawler, error) {
	return newCrawler(cfg, set, open, log, false)
}

// NewMaintenance prepares a crawler that crawls nothing, for a command that
// changes a few records and sends their writes (confirm-deletes): a state
// store shared by a cluster is opened without taking part in its crawl,
// so the processes crawling keep their shares.
func NewMaintenance(cfg *config.Config, set *rules.Set, open SinkOpener, log *slog.Logger) (*Crawler, error) {
	return newCrawler(cfg, set, open, log, true)
}

func newCrawler(cfg *config.Config, set *rules.Set, open SinkOpener, log *slog.Logger, maintain bool) (*Crawler, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &Crawler{cfg: cfg, rules: set, log: log, maintain: maintain,
		sources: map[string]*source{}, agent: robots.ProductToken(cfg.UserAgent), timing: defaultTiming,
		unsettled: newUnsettledGroups()}
	c.clock.Store(new(time.Now))
	c.cycles.now = c.now
	c.cycles.report.Store(NewReport(""))
	var err error
	if c.formats, c.readers, err = openReaders(cfg, formats); err != nil {
		return nil, err
	}
	if cfg.Renders() {
		b := cfg.Browser
		c.browser = render.New(render.Options{Path: b.Path, Tabs: b.Tabs, MaxMemoryBytes: b.MaxMemoryBytes, Log: log, Now: c.now})
	}
	for i := range cfg.Sources {
		src, err := c.newSource(&cfg.Sources[i])
		if err != nil {
			c.readers.close()
			return nil, err
		}
		c.sources[src.cfg.Name] = src
		c.order = append(c.order, src)
		c.fetchers = append(c.fetchers, src.fetch)
	}
	// politeness takes the sources and where it says what it learns; the
	// state store joins it once opened.
	deps := politeDeps{fetchers: c.fetchers, agent: c.agent, now: c.now, log: c.log, report: c.reportNow}
	for _, src := range c.order {
		deps.sources = append(deps.sources, src.cfg)
	}
	c.polite = newPoliteness(deps)
	c.robots = c.newRobots()
	front, closer, err := c.openStore(cfg)
	if err != nil {
		c.readers.close()
		return nil, err // it names the state store
	}
	c.store = closer
	c.writes = newWriter(front, log, c.reportNow)
	c.useStore(front)
	s, err := open(c.writes.result)
	if err != nil {
		c.writes.acks.close()
		closer.Close()
		c.readers.close()
		return nil, err
	}
	c.sink, c.writes.sink = s, s
	if o, ok := s.(interface{ Observe(sink.Observer) }); ok {
		o.Observe(sinkObserver{c})
	}
	if u, ok := s.(interface{ UseClock(func() time.Time) }); ok {
		u.UseClock(c.now)
	}
	return c, nil
}

// useStore makes front the state store of every part that asks it: the
// crawl, politeness, the cycles and the writer.
func (c *Crawler) useStore(front frontier.Store) {
	c.front = front
	c.polite.store, c.cycles.meta, c.writes.store = front, front, front
}

// warnings are the conditions every cycle's report repeats.
func (c *Crawler) warnings(report *Report) {
	c.clusterWarnings(report)
	if c.cfg.Fetch.InsecureSkipVerify {
		report.Warn("TLS certificates are not verified (fetch.insecure_skip_verify)")
		c.log.Warn("TLS certificates are not verified", "setting", "fetch.insecure_skip_verify")
	}
	for _, src := range c.order {
		if !*src.cfg.Robots.Obey {
			report.Warn(fmt.Sprintf("source %s ignores robots.txt and robots directives (robots.obey: false)", src.cfg.Name))
			c.log.Warn("robots.txt and robots directives ignored", "source", src.cfg.Name, "setting", "robots.obey")
		}
	}
	for _, w := range c.rules.Warnings() {
		report.Warn(w)
		c.log.Warn(w)
	}
	paused := c.Paused()
	for _, src := range c.order {
		if p, ok := paused[src.cfg.Name]; ok {
			report.Warn(fmt.Sprintf("source %s is paused since %s: nothing of it is fetched until it is resumed (docs/api.md)", src.cfg.Name, p.Since.Format(time.RFC3339)))
			c.log.Warn("source paused: nothing of it is fetched", "source", src.cfg.Name, "since", p.Since.Format(time.RFC3339), "by", p.By)
		}
	}
}

// newRobots is the crawler's robots.txt cache, fetching through the
// sources' fetch layers.
func (c *Crawler) newRobots() *robots.Cache {
	return robots.NewCache(c.polite.fetchRobots, robots.CacheOptions{UserAgent: c.cfg.UserAgent, RetryMin: c.timing.robotsRetry, Now: c.now})
}

// Close flushes and closes the sink, within closeGrace, and closes the
// state store; writes that have not landed stay pending for the next
// start. Later calls return the first call's result.
func (c *Crawler) Close() error {
	c.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), c.timing.closeGrace)
		defer cancel()
		c.closeErr = c.writes.close(ctx)
		if err := c.store.Close(); c.closeErr == nil {
			c.closeErr = err
		}
		c.readers.close()
		if c.browser != nil {
			_ = c.browser.Close()
		}
	})
	return c.closeErr
}

// Frontier gives read access to the state store, for status and tests.
func (c *Crawler) Frontier() *frontier.Frontier { return c.bolt }

// now is the time by the crawler's clock. Waits of a duration (tickers,
// timeouts) are not on it: they run on real time, which a test moves
// with testing/synctest.
func (c *Crawler) now() time.Time { return (*c.clock.Load())() }

// Now is the time by the crawler's clock, for the service around it (the
// status page, the control API, the notifications) to read the same.
func (c *Crawler) Now() time.Time { return c.now() }

// reportNow is the report of the cycle running, or of the last one.
func (c *Crawler) reportNow() *Report { return c.cycles.current() }

// Meta keys of the state store.
const (
	metaTarget      = "sink_target"   // the sink target last published
	metaBuilding    = "sink_building" // the sink target whose rebuild was started
	metaCycleDone   = "cycle_done"    // the last cycle that fetched everything it queued
	metaFingerprint = "fingerprint/"  // + source name: the config fingerprint last applied
	metaRender      = "render/"       // + source name: the render fingerprint last applied
	metaDiscovered  = "discovered/"   // + source name: when its start URLs were last queued
	metaOrphansNone = "orphans_none"  // the last orphan walk that found nothing (see orphanVerdict)
	// + host key: the sitemaps its robots.txt named when its holder last
	// read it (a cluster; see sitemapsNamed)
	metaRobotsSitemaps = "robots_sitemaps/"
)

// Reapply re-decides every known URL against the current crawl space; the
// deletions it decides are sent by the writer's resume.
func (c *Crawler) Reapply() error {
	var verdicts []frontier.Verdict
	err := frontier.ForEach(c.front, frontier.Query{}, func(r frontier.Record) error {
		if v := c.reapplyVerdict(&r); v.Changes(&r) {
			verdicts = append(verdicts, v)
		}
		return nil
	})
	if err != nil {
		return err
	}
	dropped, requeued, err := c.front.Reapply(verdicts)
	if err != nil {
		return err
	}
	c.log.Info("configuration changed: crawl space re-applied to known URLs", "dropped", dropped, "requeued", requeued)
	return nil
}

// verdict is what the current crawl space says of a known URL.
func (c *Crawler) verdict(r *frontier.Record) frontier.Verdict {
	v := frontier.Verdict{URL: r.URL}
	if r.State == frontier.Excluded && r.Orphan {
		// Excluded for want of a link, not by the config: a link brings it back.
		v.Reason = reasonOrphan
		return v
	}
	if r.State == frontier.Excluded && r.Reason == ReasonRemoved {
		// Taken out by a request, not by the config: a request brings it back.
		v.Reason = ReasonRemoved
		return v
	}
	src := c.sources[r.Source]
	if src == nil {
		v.Reason = "source_removed"
		return v
	}
	if r.State == frontier.Excluded && src.rules.Key(r.URL) != r.URL {
		// A link refused as found, never a URL to fetch: the page that
		// holds it judges it again when it is read.
		v.Reason = r.Reason
		return v
	}
	d := src.rules.Decide(r.URL, r.Depth)
	if !d.Crawl {
		v.Reason = string(d.Reason)
		return v
	}
	v.Allowed, v.Refetch = true, r.Indexed && !d.Index
	return v
}

// reapplyVerdict is verdict with the delete of a refused URL's document
// held back when its source is guarded: a config change that excludes
// most of a source is held like any other cycle's deletes.
func (c *Crawler) reapplyVerdict(r *frontier.Record) frontier.Verdict {
	v := c.verdict(r)
	v.Hold = !v.Allowed && c.guarded(r.Source)
	return v
}

// Rewrite queues every URL holding a document to be fetched and written
// again whatever it holds (crawlspace reindex).
func (c *Crawler) Rewrite() (int, error) { return c.front.RequeueIndexed() }

// checkpoint re-reads the paused sources and the reject lists; when a
// list changed, queued URLs that now fall outside the crawl space are
// dropped with their reason.
func (c *Crawler) checkpoint() error {
	// Another process sharing the store may have paused or resumed a
	// source; within a cycle, this one learns it here.
	if _, err := c.applyPaused(); err != nil {
		c.log.Warn("paused sources not read", "err", err)
	}
	changed, err := c.rules.Reload()
	if err != nil {
		c.log.Warn("reject list not reloaded", "err", err)
		c.reportNow().Warn(err.Error())
	}
	if !changed {
		return nil
	}
	type refusal struct{ source, reason, rule string }
	seen := map[string]refusal{}
	var drops []frontier.Verdict
	start := c.now()
	err = frontier.ForEach(c.front, frontier.Query{States: []frontier.State{frontier.Waiting}}, func(r frontier.Record) error {
		src := c.sources[r.Source]
		if src == nil || r.Indexed || r.Pending != "" {
			// A URL with a document is left to the worker that leases it:
			// it re-decides the URL and deletes the document as well.
			return nil
		}
		if d := src.rules.Decide(r.URL, r.Depth); !d.Crawl {
			seen[r.URL] = refusal{r.Source, string(d.Reason), d.Rule}
			drops = append(drops, frontier.Verdict{URL: r.URL, Reason: string(d.Reason)})
		}
		return nil
	})
	n := 0
	if err == nil {
		n, err = c.front.Drop(drops)
	}
	if n > 0 {
		c.log.Info("reject list reloaded: queued URLs dropped", "dropped", n)
	}
	// Count in the report the URLs Drop took out of the queue; one leased
	// meanwhile was re-decided (and counted) by its worker, which stamps
	// CheckedAt, while Drop leaves it as it was.
	type key struct{ source, reason string }
	counts, examples := map[key]int{}, map[key]string{}
	for u, ref := range seen {
		r, ok, gerr := c.front.Get(u)
		if gerr != nil || !ok || r.State != frontier.Excluded || r.Reason != ref.reason || r.CheckedAt.After(start) {
			continue
		}
		k := key{ref.source, ref.reason}
		counts[k]++
		if examples[k] == "" || u < examples[k] {
			examples[k] = u
		}
	}
	report := c.reportNow()
	for k, cnt := range counts {
		report.ReasonN(k.source, examples[k], k.reason, seen[examples[k]].rule, cnt)
	}
	return err
}

// addMeta turns a crawl rule's add_meta into what mapping takes.
func addMeta(d rules.Decision) map[string]string {
	if len(d.Meta) == 0 {
		return nil
	}
	m := make(map[string]string, len(d.Meta))
	for k, vs := range d.Meta {
		if len(vs) > 0 {
			m[k] = vs[0]
		}
	}
	return m
}

// extractorFor returns the extractor of a media type of the source a
// decision files the document under (a crawl rule's source action may name
// another source).
func (c *Crawler) extractorFor(src *source, d rules.Decision, mediaType string) (Extractor, string) {
	if d.Source != "" && d.Source != src.cfg.Name {
		if other := c.sources[d.Source]; other != nil {
			return other.extractors.forType(mediaType), other.cfg.Name
		}
	}
	return src.extractors.forType(mediaType), src.cfg.Name
}

// lastSaid holds what was last said (logged, or kept in the state) of
// each key, to say it again only when it changes.
type lastSaid struct {
	mu sync.Mutex
	of map[string]string
}

// swap keeps v for k and returns what was kept before, and whether
// anything was.
func (l *lastSaid) swap(k, v string) (prev string, seen bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	prev, seen = l.of[k]
	if l.of == nil {
		l.of = map[string]string{}
	}
	l.of[k] = v
	return prev, seen
}

// load is what was kept for k.
func (l *lastSaid) load(k string) (v string, ok bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	v, ok = l.of[k]
	return v, ok
}

// forget drops what was kept for k.
func (l *lastSaid) forget(k string) {
	l.mu.Lock()
	delete(l.of, k)
	l.mu.Unlock()
}
