package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// Options are a soak's parameters.
type Options struct {
	ES         string // the node's base URL; the service reaches it through the fault proxy
	Crawlspace string // the crawlspace binary
	Dir        string // the run's directory: config, state, logs
	Index      string // the alias the service writes to; the soak deletes its indices at the end
	Duration   time.Duration
	Seed       uint64
	Pages      int   // pages of the ordinary site at the start
	BombSize   int64 // decoded bytes of each compression bomb
	MaxRSSMB   int64 // bound on the service's peak RssAnon
	MaxStateMB int64 // bound on the state directory at the end
	ExitWithin time.Duration
	// Cluster runs the cluster of two beside the service: two more crawlspace processes and
	// a state-node outage (cluster.go).
	Cluster  bool
	Progress io.Writer // a line per event of the soak; nil for none
}

// The service's settings the checks depend on.
const (
	requestTimeout   = 3 * time.Second // elasticsearch.request_timeout
	fetchTimeout     = 4 * time.Second // fetch.timeout: the drips end here
	trapMaxURLs      = 600             // the trap source's budget.max_urls
	trapPagesPerCyle = 150             // the trap source's budget.max_pages_per_cycle
	churnMaxURLs     = 200             // the churn source's budget.max_urls
	// The faults take at least faultShare percent of the run, the site's changes end at
	// changeShare percent: the rest of the run is the fault-free, change-free end.
	faultShare  = 40
	changeShare = 50
)

// Result is what a soak found.
type Result struct {
	Checks  []check
	Phases  []phaseRecord
	Cycles  []cycle
	Hosts   []hostResult
	Changes []change
	Memory  []memSample
	Start   time.Time
	Quiet   time.Time // the last site change or fault ended; nothing changed after
	End     time.Time // SIGTERM sent

	requests map[string][]request // by host
}

// Passed says whether every check passed.
func (r *Result) Passed() bool {
	for _, c := range r.Checks {
		if !c.Pass {
			return false
		}
	}
	return len(r.Checks) > 0
}

// check is one line of the soak's verdict.
type check struct {
	Name    string
	Pass    bool
	Figures string
}

// change is one round of edits to the ordinary site.
type change struct {
	At                     time.Time
	Edited, Added, Removed int
}

// hostResult is one host's requests, held to its politeness.
type hostResult struct {
	Name        string
	MaxParallel int
	Delay       time.Duration
	politeness
}

// soak is one run in progress.
type soak struct {
	opts  Options
	start time.Time
	site  *site
	haz   *hostileSites
	hosts map[string]*host
	proxy *faultproxy.Proxy
	svc   *service
	cl    *cluster // the two processes sharing a crawl whose state node fails
	logMu sync.Mutex

	hostsOnce sync.Once
}

// logf writes a progress line; the fault schedule and the site's changes write from goroutines
// of their own.
func (s *soak) logf(format string, args ...any) {
	if s.opts.Progress == nil {
		return
	}
	line := fmt.Sprintf("soak %s: %s\n", clock(time.Since(s.start)), fmt.Sprintf(format, args...))
	s.logMu.Lock()
	defer s.logMu.Unlock()
	io.WriteString(s.opts.Progress, line)
}

// clock writes a duration as m:ss.
func clock(d time.Duration) string {
	d = d.Round(time.Second)
	return fmt.Sprintf("%d:%02d", int(d.Minutes()), int(d.Seconds())%60)
}

// Run soaks the service: it serves the sites and the proxy, runs `crawlspace run` for
// opts.Duration while it changes the ordinary site and drives the fault schedule through the
// first part, waits for a cycle that began after the last change and fault to complete, stops
// the service with SIGTERM, and checks what it left. An error means the soak could not be run;
// a failed check is in the result.
func Run(ctx context.Context, opts Options) (*Result, error) {
	s, err := begin(ctx, opts)
	if err != nil {
		return nil, err
	}
	defer s.close()
	res := &Result{Start: s.start}
	// A service that dies ends the soak's schedule at once; the checks then say what happened.
	runCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-s.svc.exited:
			cancel()
		case <-runCtx.Done():
		}
	}()
	if err := s.drive(runCtx, res); err != nil {
		return nil, err
	}
	s0, m0 := s.proxy.Stats(), s.metricsNow()
	settled, settleFigures := s.settle(runCtx, res.Quiet)
	if ctx.Err() != nil {
		s.svc.stop(time.Minute)
		return nil, fmt.Errorf("interrupted after %s: %w", clock(time.Since(s.start)), ctx.Err())
	}
	c := &checker{soak: s, res: res}
	c.stores, _ = s.svc.storeCounts()
	c.stateBytes = dirSize(filepath.Join(opts.Dir, "state"))
	res.End = time.Now()
	res.Phases = append(res.Phases, s.finalPass(res.Quiet, res.End, s0, m0))
	exitAfter, stopErr := s.svc.stop(time.Minute)
	s.collect(res)

	c.settled(settled, settleFigures)
	if err := c.index(); err != nil {
		return nil, err
	}
	c.trap()
	c.memory()
	c.fanout()
	c.politeness()
	c.faults()
	c.exit(exitAfter, stopErr)
	if s.cl != nil {
		c.cluster()
	}
	return res, nil
}

// begin serves the sites and the proxy and starts the service; on an error it leaves nothing
// running.
func begin(ctx context.Context, opts Options) (_ *soak, err error) {
	s := &soak{opts: opts, start: time.Now(), site: newSite(opts.Pages, opts.Seed)}
	defer func() {
		if err != nil {
			s.close()
		}
	}()
	if s.haz, err = newHostileSites(opts.Seed, opts.BombSize); err != nil {
		return nil, err
	}
	if s.hosts, err = startHosts(s.site, s.haz); err != nil {
		return nil, err
	}
	if s.proxy, err = faultproxy.New(opts.ES); err != nil {
		return nil, err
	}
	cfg := filepath.Join(opts.Dir, "soak.yaml")
	if err := os.WriteFile(cfg, []byte(s.config()), 0o644); err != nil {
		return nil, err
	}
	s.start = time.Now()
	if s.svc, err = startService(ctx, opts.Crawlspace, cfg, opts.Dir); err != nil {
		return nil, err
	}
	s.svc.killAboveKB = 4 * opts.MaxRSSMB << 10
	go s.svc.watch()
	s.logf("crawlspace run (pid %d) serves %s; site %s", s.svc.pid, s.svc.metricsURL, s.hosts["site"].URL)
	if !opts.Cluster {
		return s, nil
	}
	if s.cl, err = startCluster(ctx, opts); err != nil {
		return nil, err
	}
	go s.cl.run(ctx, s.logf)
	s.logf("cluster: crawlspace run a (pid %d) and b (pid %d) share a crawl of %d hosts", s.cl.procs[0].pid, s.cl.procs[1].pid, clusterHosts)
	return s, nil
}

// close ends whatever of the soak still runs.
func (s *soak) close() {
	if s.svc != nil && s.svc.alive() {
		s.svc.kill()
	}
	s.closeHosts()
	if s.proxy != nil {
		s.proxy.Close()
	}
	if s.cl != nil {
		s.cl.close()
	}
}

// closeHosts stops the sites once, waiting for every request they are serving.
func (s *soak) closeHosts() {
	s.hostsOnce.Do(func() { closeHosts(s.hosts) })
}

// drive runs the fault schedule and the site's changes side by side until both are done, and
// notes the moment after which nothing changed.
func (s *soak) drive(ctx context.Context, res *Result) error {
	var wg sync.WaitGroup
	var faultErr error
	wg.Go(func() { res.Phases, faultErr = s.faults(ctx) })
	wg.Go(func() { res.Changes = s.changeSite(ctx) })
	wg.Wait()
	res.Quiet = time.Now()
	if faultErr != nil && !errors.Is(faultErr, context.Canceled) {
		return faultErr
	}
	return nil
}

// faults applies the schedule's phases in turn, then lets everything pass.
func (s *soak) faults(ctx context.Context) ([]phaseRecord, error) {
	defer s.proxy.Set(faultproxy.Fault{Mode: faultproxy.Pass})
	fr := &faultRunner{proxy: s.proxy, metrics: s.svc.scrape, capEach: 3 * time.Minute, tick: 250 * time.Millisecond}
	phases := schedule(s.opts.Duration*faultShare/100, requestTimeout)
	var recs []phaseRecord
	for i, ph := range phases {
		s.logf("fault phase %d of %d: %s, at least %v", i+1, len(phases), ph.Name, ph.Min.Round(time.Second))
		rec, err := fr.one(ctx, ph)
		recs = append(recs, rec)
		s.logf("  %s: %s", rec.Name, rec.Evidence)
		if err != nil {
			return recs, err
		}
	}
	return recs, nil
}

func (s *soak) metricsNow() serviceMetrics {
	m, _ := s.svc.scrape()
	return m
}

// collect gathers, once the service has stopped, what the sites and the report file saw.
func (s *soak) collect(res *Result) {
	s.closeHosts()
	s.logf("stopped: exit %d", s.svc.exitCode())
	s.svc.readReport() // the report of the cycle SIGTERM interrupted
	res.Cycles = s.svc.cycleList()
	res.requests = map[string][]request{}
	for name, h := range s.hosts {
		res.requests[name] = h.rec.requests()
	}
}

// finalPass measures the fault-free end of the run: requests must have passed.
func (s *soak) finalPass(from, to time.Time, s0 faultproxy.Stats, m0 serviceMetrics) phaseRecord {
	rec := phaseRecord{Name: "pass, to the end", Start: from, End: to}
	rec.delta(s0, s.proxy.Stats(), m0, s.metricsNow())
	rec.judge(faultproxy.Fault{Mode: faultproxy.Pass})
	return rec
}

// changeSite edits, adds and removes articles a few times, from a tenth of the run to
// changeShare percent of it, and returns what it did.
func (s *soak) changeSite(ctx context.Context) []change {
	d := s.opts.Duration
	rounds := max(2, int(d/time.Minute)+1)
	r := rand.New(rand.NewPCG(s.opts.Seed, 0x50a4))
	var out []change
	for i := range rounds {
		at := s.start.Add(d/10 + time.Duration(i)*(d*(changeShare-10)/100)/time.Duration(rounds-1))
		select {
		case <-ctx.Done():
			return out
		case <-time.After(time.Until(at)):
		}
		n := s.site.counts().Articles
		ch := change{At: time.Now(), Edited: max(3, n/20), Added: max(1, n/50), Removed: max(1, n/50)}
		s.site.change(r, ch.Edited, ch.Added, ch.Removed)
		out = append(out, ch)
		s.logf("site change %d of %d: %d edited, %d added, %d removed", i+1, rounds, ch.Edited, ch.Added, ch.Removed)
	}
	return out
}

// settle waits until the run has lasted its duration and a cycle that began after quiet has
// completed: that cycle saw the site as it is now, with every fault over.
func (s *soak) settle(ctx context.Context, quiet time.Time) (bool, string) {
	s.logf("waiting for a cycle that begins after the last change and fault to complete")
	const within = 10 * time.Minute
	t := time.NewTicker(time.Second)
	defer t.Stop()
	var done *cycle
	for {
		if c, ok := s.svc.completedSince(quiet); ok {
			done = &c
			break
		}
		if time.Since(quiet) > within {
			return false, fmt.Sprintf("no cycle begun after the last change or fault completed within %v", within)
		}
		select {
		case <-ctx.Done():
			return false, "the service ended before a cycle after the last change completed"
		case <-t.C:
		}
	}
	s.logf("cycle begun at %s completed in %.1fs", clock(done.Started.Sub(s.start)), done.Finished.Sub(done.Started).Seconds())
	select {
	case <-ctx.Done():
		return false, "the service ended before the soak's duration was over"
	case <-time.After(time.Until(s.start.Add(s.opts.Duration))):
	}
	return true, fmt.Sprintf("cycle begun %s after the last change or fault completed in %.1fs",
		done.Started.Sub(quiet).Round(time.Second), done.Finished.Sub(done.Started).Seconds())
}

// dirSize is the bytes of the files under dir.
func dirSize(dir string) int64 {
	var n int64
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	return n
}
