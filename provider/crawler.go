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
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// Crawler runs crawl cycles over every source of one configuration.
type Crawler struct {
	cfg     *config.Config
	rules   *rules.Set
	front   *frontier.Frontier
	sink    sink.Sink
	report  *Report
	log     *slog.Logger
	sources map[string]*source
	order   []*source // config order
	robots  *robots.Cache
	agent   string // robots.txt product token

	// delays holds robots.txt Crawl-delays learned per host key, read by
	// the frontier's politeness policy.
	delays sync.Map
	// sourceHeaders names every custom header of any source, to strip on
	// a redirect to another host.
	sourceHeaders map[string]bool
}

// New prepares a crawler and opens its state store under cfg.StateDir. The
// sink must report its results to report.SinkResult. Close releases the store.
func New(cfg *config.Config, set *rules.Set, s sink.Sink, report *Report, log *slog.Logger) (*Crawler, error) {
	if log == nil {
		log = slog.Default()
	}
	c := &Crawler{cfg: cfg, rules: set, sink: s, report: report, log: log,
		sources: map[string]*source{}, sourceHeaders: map[string]bool{}, agent: robots.ProductToken(cfg.UserAgent)}
	for i := range cfg.Sources {
		src, err := c.newSource(&cfg.Sources[i])
		if err != nil {
			return nil, err
		}
		c.sources[src.cfg.Name] = src
		c.order = append(c.order, src)
	}
	c.robots = robots.NewCache(c.fetchRobots, robots.CacheOptions{UserAgent: cfg.UserAgent})
	if cfg.Fetch.InsecureSkipVerify {
		report.Warn("TLS certificates are not verified (fetch.insecure_skip_verify)")
		log.Warn("TLS certificates are not verified", "setting", "fetch.insecure_skip_verify")
	}
	for _, src := range c.order {
		if !config.Bool(src.cfg.Robots.Obey, true) {
			msg := fmt.Sprintf("source %s ignores robots.txt and robots directives (robots.obey: false)", src.cfg.Name)
			report.Warn(msg)
			log.Warn("robots.txt and robots directives ignored", "source", src.cfg.Name, "setting", "robots.obey")
		}
	}
	for _, w := range set.Warnings() {
		report.Warn(w)
		log.Warn(w)
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{Policy: c.policy})
	if err != nil {
		return nil, fmt.Errorf("state store %s: %w", cfg.StateDir, err)
	}
	c.front = front
	report.onAck = c.acknowledge
	return c, nil
}

// acknowledge records a sink outcome on the URL: the pending write is done,
// or failed for good (its reason is in the report).
func (c *Crawler) acknowledge(res sink.Result) {
	err := c.front.Update(res.URL, func(r *frontier.Record) error {
		r.Pending = ""
		switch {
		case res.Outcome == sink.Failed:
			r.Indexed = false
			r.Hash = "" // so the next fetch tries the write again
		case res.Delete:
			r.Indexed = false
		default:
			r.Indexed = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, frontier.ErrNotFound) {
		c.log.Error("cannot record index acknowledgement", "url", res.URL, "err", err)
	}
}

// resumePending sends again the writes a previous run handed to the sink
// but never saw acknowledged (a crash, an outage that outlasted it): deletes
// by id; documents by refetching their URL, whose hash is forgotten so the
// page is written whatever it holds.
func (c *Crawler) resumePending(ctx context.Context) error {
	var recs []frontier.Record
	if err := c.front.Pending(func(r frontier.Record) error {
		recs = append(recs, r)
		return nil
	}); err != nil {
		return err
	}
	for _, r := range recs {
		if r.Pending == pendingDelete {
			c.report.expect(r.URL, r.Source)
			if err := c.sink.Delete(ctx, r.DocID, r.URL); err != nil {
				return err
			}
			continue
		}
		err := c.front.Update(r.URL, func(rec *frontier.Record) error {
			rec.Hash = ""
			if rec.State != frontier.Waiting && rec.State != frontier.InFlight {
				rec.State, rec.Class = frontier.Waiting, frontier.Refresh
			}
			return nil
		})
		if err != nil && !errors.Is(err, frontier.ErrNotFound) {
			return err
		}
	}
	if len(recs) > 0 {
		c.log.Info("unacknowledged writes resumed", "count", len(recs))
	}
	return nil
}

// Close closes the state store.
func (c *Crawler) Close() error { return c.front.Close() }

// Frontier gives read access to the state store, for status and tests.
func (c *Crawler) Frontier() *frontier.Frontier { return c.front }

// policy is the frontier's politeness for a host: the source's limits, and
// the larger of its delay and the host's robots.txt Crawl-delay.
func (c *Crawler) policy(hostKey string) frontier.HostPolicy {
	src := c.sourceForHost(hostKey)
	p := src.cfg.Politeness
	hp := frontier.HostPolicy{MaxParallel: p.MaxParallelPerHost, Delay: p.Delay.D()}
	if config.Bool(p.ObeyCrawlDelay, true) && config.Bool(src.cfg.Robots.Obey, true) {
		if d, ok := c.delays.Load(hostKey); ok && d.(time.Duration) > hp.Delay {
			hp.Delay = d.(time.Duration)
		}
	}
	return hp
}

// sourceForHost picks the source whose start URLs are on the host, else the
// first source: politeness is per host, whichever source the URL came from.
func (c *Crawler) sourceForHost(hostKey string) *source {
	for _, src := range c.order {
		if src.own[hostKey] {
			return src
		}
	}
	return c.order[0]
}

// Crawl runs one cycle of every source: reject lists reloaded, start URLs,
// sitemaps and feeds queued, aged checks due queued, then every queued URL
// fetched until nothing is waiting. A cycle that was interrupted resumes
// from the state store. Documents handed to the sink are flushed either way.
func (c *Crawler) Crawl(ctx context.Context) error {
	cycle, err := c.front.BeginCycle()
	if err != nil {
		return err
	}
	c.log.Debug("cycle starts", "cycle", cycle)
	if err := c.resumePending(ctx); err != nil {
		return err
	}
	if err := c.checkpoint(); err != nil {
		return err
	}
	now := time.Now()
	for _, src := range c.order {
		if err := c.queueStart(src); err != nil {
			return err
		}
		if src.cfg.MaxAge > 0 {
			if _, err := c.front.RequeueDue(src.cfg.Name, now.Add(-src.cfg.MaxAge.D())); err != nil {
				return err
			}
		}
	}
	for _, src := range c.order {
		c.discoverListed(ctx, src)
	}
	err = c.work(ctx)
	flushCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	if ferr := c.sink.Flush(flushCtx); ferr != nil && err == nil {
		err = fmt.Errorf("sink: %w", ferr)
	}
	return err
}

// checkpointEvery is how often a running crawl re-reads the reject lists.
const checkpointEvery = 30 * time.Second

// checkpoint re-reads the reject lists; when one changed, queued URLs that
// now fall outside the crawl space are dropped with their reason.
func (c *Crawler) checkpoint() error {
	changed, err := c.rules.Reload()
	if err != nil {
		c.log.Warn("reject list not reloaded", "err", err)
		c.report.Warn(err.Error())
	}
	if !changed {
		return nil
	}
	n, err := c.front.Drop(func(r frontier.Record) (bool, string) {
		src := c.sources[r.Source]
		if src == nil {
			return false, ""
		}
		if d := src.rules.Decide(r.URL, r.Depth); !d.Crawl {
			return true, string(d.Reason)
		}
		return false, ""
	})
	if n > 0 {
		c.log.Info("reject list reloaded: queued URLs dropped", "dropped", n)
	}
	return err
}

func (c *Crawler) queueStart(src *source) error {
	items := make([]frontier.Item, 0, len(src.cfg.StartURLs))
	for _, raw := range src.rules.StartURLs() {
		d := src.rules.Decide(raw, 0)
		items = append(items, frontier.Item{URL: raw, Source: src.cfg.Name, Class: frontier.Start, Shift: d.Priority})
	}
	_, err := c.front.Add(items...)
	return err
}

// work runs the worker pool until the cycle is done or ctx ends.
func (c *Crawler) work(ctx context.Context) error {
	workers := max(c.cfg.Fetch.Concurrency, 1)
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				lease, err := c.front.Next(ctx)
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
		t := time.NewTicker(checkpointEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				if err := c.checkpoint(); err != nil {
					c.log.Warn("checkpoint failed", "err", err)
				}
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

// fetchRobots fetches robots.txt with the client of the source owning the
// host, so the address rules and TLS settings apply to it too.
func (c *Crawler) fetchRobots(ctx context.Context, robotsURL string) (int, io.ReadCloser, error) {
	u, err := url.Parse(robotsURL)
	if err != nil {
		return 0, nil, err
	}
	src := c.sourceForHost(frontier.HostKey(u.String()))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, robotsURL, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("User-Agent", c.cfg.UserAgent)
	res, err := src.robotsClient.Do(req)
	if err != nil {
		return 0, nil, err
	}
	return res.StatusCode, res.Body, nil
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

// extractorFor returns the extractor of the source a decision files the
// document under (a crawl rule's source action may name another source).
func (c *Crawler) extractorFor(src *source, d rules.Decision) (*mapping.Extractor, string) {
	if d.Source != "" && d.Source != src.cfg.Name {
		if other := c.sources[d.Source]; other != nil {
			return other.extractor, other.cfg.Name
		}
	}
	return src.extractor, src.cfg.Name
}
