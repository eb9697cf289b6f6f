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
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/url"
	"slices"
	"strconv"
	"strings"
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
	// report is the current cycle's, replaced when a cycle starts while
	// the sink's acknowledgements of the last may still arrive and the
	// status page reads it: it is only ever loaded and stored whole
	// (reportNow).
	report atomic.Pointer[Report]
	// reportMu guards the observer each new report takes.
	reportMu sync.Mutex
	observer Observer // set by SetObserver

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
	// ran is the cycle last begun or resumed here.
	ran atomic.Uint64
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
		polite: newPoliteness(), unsettled: newUnsettledGroups()}
	c.clock.Store(new(time.Now))
	c.report.Store(NewReport(""))
	var err error
	if c.formats, c.readers, err = openReaders(cfg, formats); err != nil {
		return nil, err
	}
	if cfg.Renders() {
		b := cfg.Browser
		c.browser = render.New(render.Options{Path: b.Path, Tabs: b.Tabs, MaxMemoryBytes: b.MaxMemoryBytes, Log: log})
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
	c.robots = c.newRobots()
	front, closer, err := c.openStore(cfg)
	if err != nil {
		c.readers.close()
		return nil, err // it names the state store
	}
	c.front, c.store = front, closer
	c.writes = newWriter(front, log, c.reportNow)
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
	return c, nil
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
	return robots.NewCache(c.fetchRobots, robots.CacheOptions{UserAgent: c.cfg.UserAgent, RetryMin: c.timing.robotsRetry, Now: c.now})
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

// reportNow is the report of the cycle running, or of the last one.
func (c *Crawler) reportNow() *Report { return c.report.Load() }

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
	report := newReport(c.sink.Target(), c.now)
	c.reportMu.Lock()
	report.obs = c.observer
	c.report.Store(report)
	c.reportMu.Unlock()
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
	cycle, resumed, err := c.beginOrResume()
	if err != nil {
		return err
	}
	c.ran.Store(cycle)
	c.log.Debug("cycle starts", "cycle", cycle, "resumed", resumed)
	if err := c.rebuildIfNewTarget(); err != nil {
		return err
	}
	if err := c.reapplyIfChanged(); err != nil {
		return err
	}
	if err := c.rereadIfRenderChanged(); err != nil {
		return err
	}
	if err := c.writes.resume(ctx); err != nil {
		return err
	}
	if !resumed {
		if err := c.recheckHeld(); err != nil {
			return err
		}
	}
	if err := c.checkpoint(); err != nil {
		return err
	}
	if err := c.forgetCrawlDelays(); err != nil {
		return err
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
	return c.front.PutMeta(metaCycleDone, strconv.AppendUint(nil, cycle, 10))
}

// beginOrResume starts a new cycle, unless the last one ended before
// everything it queued was fetched (a kill, a stop): that one is resumed,
// since a new cycle would queue the start URLs again and fetch pages the
// interrupted one had already done.
func (c *Crawler) beginOrResume() (cycle uint64, resumed bool, err error) {
	if cur := c.front.Cycle(); cur > 0 {
		done, err := c.front.GetMeta(metaCycleDone)
		if err != nil {
			return 0, false, err
		}
		if string(done) != strconv.FormatUint(cur, 10) {
			return cur, true, nil
		}
	}
	cycle, err = c.front.BeginCycle()
	return cycle, false, err
}

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

// publish makes the cycle's writes visible and records the target published.
func (c *Crawler) publish(ctx context.Context) error {
	if err := c.sink.Publish(ctx); err != nil {
		return fmt.Errorf("sink: %w", err)
	}
	return c.front.PutMeta(metaTarget, []byte(c.sink.Target()))
}

// learnCrawlDelays reads the robots.txt of a source's start hosts before
// anything of theirs is queued: the frontier takes a host's politeness when
// it first schedules it, so a Crawl-delay learnt only with the first page
// would let a second request start alongside the first. With the state
// shared by a cluster, only the start hosts this process holds are read
// (another's robots.txt is read by its holder, within the host's
// politeness), and the sitemaps each names are kept in the state for the
// process that discovers (sitemapsNamed).
func (c *Crawler) learnCrawlDelays(ctx context.Context, src *source) {
	share := c.cluster != nil && *src.cfg.UseSitemaps
	if !*src.cfg.Robots.Obey || !*src.cfg.Politeness.ObeyCrawlDelay && !share {
		return
	}
	for host := range src.fetch.Hosts() {
		if c.cluster != nil && !c.cluster.Schedules(host) {
			continue
		}
		hu, err := url.Parse(host + "/")
		if err != nil {
			continue
		}
		r, err := c.robots.Get(ctx, hu)
		if err == nil {
			c.learnCrawlDelay(src.cfg, host, r)
		}
		if r != nil && share {
			c.shareSitemaps(host, r.Sitemaps())
		}
		c.robotsPause(host)
	}
}

// shareSitemaps keeps in the shared state the sitemaps a start host's
// robots.txt names, when they changed since this process last kept them.
func (c *Crawler) shareSitemaps(host string, sitemaps []string) {
	v := strings.Join(sitemaps, "\n")
	if last, ok := c.sharedSitemaps.load(host); ok && last == v {
		return
	}
	if err := c.front.PutMeta(metaRobotsSitemaps+host, []byte(v)); err != nil {
		c.log.Warn("cannot keep the sitemaps robots.txt names for the cluster", "host", host, "err", err)
		return
	}
	c.sharedSitemaps.swap(host, v)
}

// sitemapsNamed returns the sitemaps the robots.txt of a start host names;
// ok is false when they are not known. With the state shared by a cluster,
// a host another process holds is not asked: its holder's last reading is
// taken from the state, unknown until the holder has made one.
func (c *Crawler) sitemapsNamed(ctx context.Context, host string) (sitemaps []string, ok bool) {
	if c.cluster != nil && !c.cluster.Schedules(host) {
		v, err := c.front.GetMeta(metaRobotsSitemaps + host)
		if err != nil || v == nil {
			return nil, false
		}
		if len(v) == 0 {
			return nil, true
		}
		return strings.Split(string(v), "\n"), true
	}
	hu, err := url.Parse(host + "/")
	if err != nil {
		return nil, false
	}
	r, err := c.robots.Get(ctx, hu)
	if err != nil {
		return nil, false
	}
	return r.Sitemaps(), true
}

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
