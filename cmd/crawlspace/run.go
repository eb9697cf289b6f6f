package main

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/control"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("run", "the service: discovery every discovery_interval, aged checks, until SIGINT or SIGTERM", runRun)
}

func runRun(args []string) int {
	cc, code, ok := parseCycleCommand("run", "rewrite this JSON file with each cycle's report", args)
	if !ok {
		return code
	}
	defer cc.stop()
	return serve(cc.ctx, cc.cfg, cc.set, cc.out, cc.reportPath, serveHooks{})
}

// serveHooks let tests follow the service.
type serveHooks struct {
	// listening receives the address of /metrics, the status page and the
	// control API.
	listening func(net.Addr)
	// cycleDone is called after each cycle has been reported.
	cycleDone func(*provider.Report, error)
}

// serve runs cycles until ctx ends: each source's discovery when its
// interval has passed, the aged checks that are due in every cycle, and a
// cycle whenever the control API asks for one. A signal stops the current
// cycle cleanly: leases go back to the frontier, acknowledged writes stay
// recorded, the next start resumes. With service.address (metrics_addr)
// set, /metrics, the status page and the control API are served there.
// Each cycle's report is sent to the receivers of service.notify.
func serve(ctx context.Context, cfg *config.Config, set *rules.Set, o output, reportPath string, hooks serveHooks) int {
	log, out := o.log, o.summary
	c, err := provider.New(cfg, set, sink.Opener(ctx, cfg), log)
	if err != nil {
		log.Error("cannot start the service", "err", err)
		return exitFailed
	}
	defer c.Close()
	// The service reads the crawler's clock, as the crawler's parts do.
	now := c.Now
	states := monitor.NewStates(c.Store(), cfg)
	states.Now = now
	states.Kick()
	notifier, err := control.NewNotifier(cfg.Service.Notify, buildVersion(), now, log)
	if err != nil {
		log.Error("cannot send the cycle notifications", "err", err)
		return exitFailed
	}
	defer func() {
		// A notification being sent may land; those still queued are dropped.
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		notifier.Close(sctx)
	}()
	// wake asks for a cycle now, or when the running one ends (the control
	// API); it holds one request, as one cycle answers any number.
	wake := make(chan struct{}, 1)
	var status *monitor.Server
	if addr := cfg.Service.Address; addr != "" {
		var err error
		if status, err = startService(cfg, c, states, wake, now, log, hooks); err != nil {
			log.Error("cannot serve metrics, the status page and the control API", "address", addr, "err", err)
			return exitFailed
		}
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			status.Shutdown(sctx)
		}()
	}
	agedEvery := agedCheckInterval(cfg)
	var down storeOutage
	for {
		stopProgress := o.watch(ctx, c, states)
		report, next, err := c.CrawlDue(ctx, now())
		stopProgress()
		ended := now()
		wait := min(next.Sub(ended), agedEvery)
		var clusterErr *esfrontier.Error
		retry, failing := down.failed(errors.As(err, &clusterErr), ended)
		if failing {
			wait = retry
		}
		if status != nil {
			status.CycleDone(report, err, ended.Add(max(wait, time.Second)))
		}
		if report != nil {
			notifier.CycleDone(report)
			report.Summary(out)
			if reportPath != "" {
				if werr := report.WriteFile(reportPath); werr != nil {
					log.Error("cannot write the report", "path", reportPath, "err", werr)
				}
			}
		}
		if ctx.Err() != nil {
			log.Info("stopping: the interrupted cycle resumes on the next start")
			return exitOK
		}
		var storeErr *frontier.StoreError
		if errors.As(err, &storeErr) {
			// A state store that cannot record (a full disk, damage) stays
			// so until someone acts: retrying would only fail again.
			log.Error("cycle failed: the service stops", "err", err)
			return exitFailed
		}
		switch {
		case failing && retry < 0:
			// As with a broken embedded store: exit 1, the partitions given
			// back if the cluster answers, else left to expire, so that the
			// processes that can crawl take them.
			log.Error("cycle failed: the state store stayed unreachable, the service stops",
				"for", down.lasted(ended).Round(time.Second).String(), "err", err)
			return exitFailed
		case failing:
			// The partitions this process holds wait for it: it tries again
			// soon, not at the next discovery.
			log.Warn("cycle failed: the state store is unreachable, the cycle is tried again",
				"in", retry.String(), "failing_for", down.lasted(ended).Round(time.Second).String(), "err", err)
		case err != nil:
			// A failed cycle (Elasticsearch down, say) is retried at the next
			// wake-up; its pending writes are kept in the state store.
			log.Error("cycle failed", "err", err)
		}
		if hooks.cycleDone != nil {
			hooks.cycleDone(report, err)
		}
		if !failing {
			log.Info("next cycle", "in", wait.Round(time.Second).String(), "next_discovery", next.Format(time.RFC3339))
		}
		select {
		case <-ctx.Done():
			log.Info("stopping")
			return exitOK
		case <-time.After(max(wait, time.Second)):
		case <-wake:
			log.Info("a cycle asked for through the control API")
		case <-c.CycleBegun():
			// Another process of the cluster began a cycle: its URLs in
			// this process's partitions wait for this process.
			log.Info("another process began a cycle: joining it", "cycle", c.Store().Cycle())
		}
	}
}

// Retries of a cycle the shared state store failed: the first after
// firstRetry, each next one twice as late up to maxRetry; after giveUp
// of failures on end the service stops.
const (
	firstRetry = 2 * time.Second
	maxRetry   = time.Minute
	giveUp     = 5 * time.Minute
)

// storeOutage follows the cycles that the shared state store failed in a
// row.
type storeOutage struct {
	since time.Time // the first failure of the row; zero when none
	wait  time.Duration
}

// failed records how a cycle ended at now: failed by the shared state
// store or not. failing says the store fails; retry is then the wait
// before the next attempt, or negative once the failures have lasted
// past giveUp.
func (o *storeOutage) failed(byStore bool, now time.Time) (retry time.Duration, failing bool) {
	if !byStore {
		*o = storeOutage{}
		return 0, false
	}
	if o.since.IsZero() {
		o.since, o.wait = now, firstRetry
	} else {
		o.wait = min(2*o.wait, maxRetry)
	}
	if now.Sub(o.since) >= giveUp {
		return -1, true
	}
	return o.wait, true
}

// lasted is how long the store has failed, at now.
func (o *storeOutage) lasted(now time.Time) time.Duration { return now.Sub(o.since) }

// agedCheckInterval is how often the service wakes for aged checks between
// discoveries: a tenth of the shortest max_age, between a minute and an hour.
func agedCheckInterval(cfg *config.Config) time.Duration {
	d := time.Hour
	for _, s := range cfg.Sources {
		if s.MaxAge > 0 {
			d = min(d, s.MaxAge.D()/10)
		}
	}
	return max(d, time.Minute)
}

// startService serves /metrics, the status page and the control API on
// the service's address.
func startService(cfg *config.Config, c *provider.Crawler, states *monitor.States, wake chan<- struct{}, now func() time.Time, log *slog.Logger, hooks serveHooks) (*monitor.Server, error) {
	names := make([]string, 0, len(cfg.Sources))
	for i := range cfg.Sources {
		names = append(names, cfg.Sources[i].Name)
	}
	metrics := monitor.NewMetrics(buildVersion(), names)
	metrics.WatchFrontier(states, c.Store())
	if cl := c.Cluster(); cl != nil {
		metrics.WatchCluster(cl)
	}
	c.SetObserver(metrics)
	status := monitor.NewServer(cfg, c, metrics, states, versionLine(), log)
	status.Now = now
	if cl := c.Cluster(); cl != nil {
		status.ShowCluster(cl)
	}
	api := control.New(control.Options{Crawler: c, Status: func() any { return status.View() }, Tokens: cfg.Service.Tokens, Log: log, Now: now,
		Wake: func() {
			select {
			case wake <- struct{}{}:
			default: // a cycle is asked for already
			}
		}})
	addr, err := status.Start(cfg.Service.Address, cfg.Service.WebConfigFile, api)
	if err != nil {
		return nil, err
	}
	scheme := "http"
	if cfg.Service.ServesTLS() {
		scheme = "https"
	}
	log.Info("serving the status page, /metrics and the control API", "url", scheme+"://"+addr.String()+"/",
		"api_tokens", len(cfg.Service.Tokens), "tls", scheme == "https")
	if hooks.listening != nil {
		hooks.listening(addr)
	}
	return status, nil
}
