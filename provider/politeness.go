package provider

import (
	"context"
	"io"
	"log/slog"
	"net/url"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// politeness is what decides the pace of the crawler's requests to each
// host: its policy (the delay between two requests and how many run at
// once, which the frontier enforces), and what hosts' robots.txt teach of
// it: the Crawl-delays learnt, those said in this cycle, when each host's
// robots.txt request ended, and the hosts whose robots.txt cannot be read.
type politeness struct {
	politeDeps

	mu sync.RWMutex
	// delays are the Crawl-delays learnt, by host key; noted those said
	// in this cycle (note).
	delays map[string]time.Duration
	noted  map[string]time.Duration
	// read holds, per host key, when a robots.txt request to the host
	// ended, until the host's delay after it has been scheduled (pause):
	// robots.txt is a load from the host like any page.
	read map[string]time.Time
	// down holds the outage of each host whose robots.txt cannot be read.
	down map[string]robotsOutage
	// lists, under listMu, is the account of the cycle's Crawl-delays in
	// the state store, by source (crawldelay.go); listMu is held across
	// the store's writes, which keep the order of the account's changes.
	listMu sync.Mutex
	lists  map[string][]CrawlDelay
}

// politeDeps are politeness's collaborators, set when the crawler is made.
type politeDeps struct {
	// sources are the sources' configurations in config order, and
	// fetchers their fetch layers: the owner of a host (fetch.Set.Owner)
	// gives the host its politeness and fetches its robots.txt.
	sources  []*config.Source
	fetchers fetch.Set
	// store is the state store: it holds a host back after its robots.txt
	// request (Backoff) and keeps the account of Crawl-delays for status.
	// It is set once opened: opening it asks for hosts' policies already.
	store politeStore
	agent string // robots.txt product token
	now   func() time.Time
	log   *slog.Logger
	// report is the report of the cycle running (Crawler.reportNow).
	report func() *Report
}

// politeStore is what politeness needs of the state store.
type politeStore interface {
	frontier.Meta
	Backoff(hostKey string, until time.Time)
}

func newPoliteness(deps politeDeps) *politeness {
	return &politeness{politeDeps: deps, delays: map[string]time.Duration{}, noted: map[string]time.Duration{},
		read: map[string]time.Time{}, down: map[string]robotsOutage{}, lists: map[string][]CrawlDelay{}}
}

// crawlDelay is the Crawl-delay learnt for the host, 0 for none.
func (p *politeness) crawlDelay(hostKey string) time.Duration {
	p.mu.RLock()
	defer p.mu.RUnlock()
	return p.delays[hostKey]
}

// learn keeps the host's Crawl-delay d and says whether it is to be said:
// the first time in a cycle, or when it changed. Each page's robots.txt
// check comes here: a value said already costs one shared lock.
func (p *politeness) learn(hostKey string, d time.Duration) bool {
	p.mu.RLock()
	said, ok := p.noted[hostKey]
	kept := p.delays[hostKey]
	p.mu.RUnlock()
	if ok && said == d && kept == d {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delays[hostKey] = d
	if said, ok := p.noted[hostKey]; ok && said == d {
		return false
	}
	p.noted[hostKey] = d
	return true
}

// forgetNoted starts a cycle in which each host's Crawl-delay is said again.
func (p *politeness) forgetNoted() {
	p.mu.Lock()
	clear(p.noted)
	p.mu.Unlock()
}

// robotsEnded notes when a robots.txt request to the host ended.
func (p *politeness) robotsEnded(hostKey string, at time.Time) {
	p.mu.Lock()
	p.read[hostKey] = at
	p.mu.Unlock()
}

// takeRobotsEnded returns, and forgets, when the last robots.txt request
// to the host ended; ok is false when none did since it was last taken.
func (p *politeness) takeRobotsEnded(hostKey string) (at time.Time, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at, ok = p.read[hostKey]
	delete(p.read, hostKey)
	return at, ok
}

// robotsOutage counts the failed robots.txt fetches of a host since it was
// last read: each failure comes with a new retry time.
type robotsOutage struct {
	retryAt  time.Time
	failures int
}

// robotsFailed records that the host's robots.txt is unavailable until
// retryAt and returns how many fetches have failed in this outage.
func (p *politeness) robotsFailed(hostKey string, retryAt time.Time) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.down[hostKey]
	if retryAt.After(out.retryAt) {
		out.retryAt = retryAt
		out.failures++
		p.down[hostKey] = out
	}
	return out.failures
}

// robotsRead ends the host's outage, if it had one.
func (p *politeness) robotsRead(hostKey string) {
	p.mu.RLock()
	_, failing := p.down[hostKey]
	p.mu.RUnlock()
	if failing {
		p.mu.Lock()
		delete(p.down, hostKey)
		p.mu.Unlock()
	}
}

// policy is the frontier's politeness for a host: the source's limits, and
// the larger of its delay and the host's robots.txt Crawl-delay, cut to
// max_crawl_delay (HostDelay), which also allows one request at a time.
// The host slots (MaxParallel) are decided here and only here; the
// frontier enforces them.
func (p *politeness) policy(hostKey string) frontier.HostPolicy {
	sc := p.owner(hostKey)
	pol := sc.Politeness
	hp := frontier.HostPolicy{MaxParallel: pol.MaxParallelPerHost, Delay: pol.Delay.D()}
	if *pol.ObeyCrawlDelay && *sc.Robots.Obey {
		if d := p.crawlDelay(hostKey); d > 0 {
			// Crawl-delay asks for one request per delay: with two slots
			// the second request would start while the first still runs.
			hp.Delay = HostDelay(pol, hostKey, sc.Name, d).Delay
			hp.MaxParallel = 1
		}
	}
	return hp
}

// owner is the configuration of the source whose start URLs are on the
// host, else of the first source: politeness is per host, whichever source
// the URL came from.
func (p *politeness) owner(hostKey string) *config.Source {
	name := p.fetchers.Owner(hostKey).Name()
	for _, sc := range p.sources {
		if sc.Name == name {
			return sc
		}
	}
	return p.sources[0]
}

// pause keeps the host from its next lease until its delay has passed
// since its robots.txt was requested, when it was; it says whether it
// was. It runs once the Crawl-delay is learnt, so the pause is the longer
// of the two, and the frontier takes the host's policy with it.
func (p *politeness) pause(hostKey string) bool {
	at, ok := p.takeRobotsEnded(hostKey)
	if !ok {
		return false
	}
	if d := p.policy(hostKey).Delay; d > 0 {
		p.store.Backoff(hostKey, at.Add(d))
		return true
	}
	return false
}

// fetchRobots fetches robots.txt through the fetch layer of the source
// owning the host, noting when the request ended: robots.txt is a load
// from the host like any page.
func (p *politeness) fetchRobots(ctx context.Context, robotsURL string) (int, io.ReadCloser, error) {
	host := urlnorm.Origin(robotsURL)
	status, body, err := p.fetchers.Robots(ctx, robotsURL)
	if err != nil {
		p.robotsEnded(host, p.now())
		return 0, nil, err
	}
	return status, &robotsBody{ReadCloser: body, done: func() { p.robotsEnded(host, p.now()) }}, nil
}

// robotsBody notes when the robots.txt request ended: when the cache is
// done reading its body.
type robotsBody struct {
	io.ReadCloser
	done func()
}

func (b *robotsBody) Close() error {
	err := b.ReadCloser.Close()
	b.done()
	return err
}

// learnCrawlDelays reads the robots.txt of a source's start hosts before
// anything of theirs is queued: the frontier takes a host's politeness when
// it first schedules it, so a Crawl-delay learnt only with the first page
// would let a second request start alongside the first. With the state
// shared by a cluster, only the start hosts this process holds are read
// (another's robots.txt is read by its holder, within the host's
// politeness), and the sitemaps each names are kept in the state for the
// process that discovers (sitemapsNamed).
//
// It stays on Crawler: it reads robots.txt through the crawler's robots
// cache, asks the cluster which hosts this process holds, and keeps the
// sitemaps for discovery (discover.go); politeness owns only what it
// learns (learnFrom) and the pause after the read (pause).
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
			c.polite.learnFrom(src.cfg, host, r)
		}
		if r != nil && share {
			c.shareSitemaps(host, r.Sitemaps())
		}
		c.polite.pause(host)
	}
}
