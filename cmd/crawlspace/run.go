package main

import (
	"context"
	"errors"
	"net"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
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
	// listening receives the address of /metrics and the status page.
	listening func(net.Addr)
	// cycleDone is called after each cycle has been reported.
	cycleDone func(*provider.Report, error)
}

// serve runs cycles until ctx ends: each source's discovery when its
// interval has passed, the aged checks that are due in every cycle. A
// signal stops the current cycle cleanly: leases go back to the frontier,
// acknowledged writes stay recorded, the next start resumes. With
// metrics_addr set, /metrics and the status page are served there.
func serve(ctx context.Context, cfg *config.Config, set *rules.Set, o output, reportPath string, hooks serveHooks) int {
	log, out := o.log, o.summary
	c, err := provider.New(cfg, set, sink.Opener(ctx, cfg), log)
	if err != nil {
		log.Error("cannot start the service", "err", err)
		return exitFailed
	}
	defer c.Close()
	states := monitor.NewStates(c.Store(), cfg)
	states.Kick()
	var status *monitor.Server
	if cfg.MetricsAddr != "" {
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
		status = monitor.NewServer(cfg, c, metrics, states, versionLine(), log)
		if cl := c.Cluster(); cl != nil {
			status.ShowCluster(cl)
		}
		addr, err := status.Start(cfg.MetricsAddr)
		if err != nil {
			log.Error("cannot serve metrics and the status page", "metrics_addr", cfg.MetricsAddr, "err", err)
			return exitFailed
		}
		log.Info("serving the status page and /metrics", "url", "http://"+addr.String()+"/")
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			status.Shutdown(sctx)
		}()
		if hooks.listening != nil {
			hooks.listening(addr)
		}
	}
	agedEvery := agedCheckInterval(cfg)
	for {
		stopProgress := o.watch(ctx, c, states)
		report, next, err := c.CrawlDue(ctx, time.Now())
		stopProgress()
		wake := min(time.Until(next), agedEvery)
		if status != nil {
			status.CycleDone(report, err, time.Now().Add(max(wake, time.Second)))
		}
		if report != nil {
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
		if err != nil {
			// A failed cycle (Elasticsearch down, say) is retried at the next
			// wake-up; its pending writes are kept in the state store.
			log.Error("cycle failed", "err", err)
		}
		if hooks.cycleDone != nil {
			hooks.cycleDone(report, err)
		}
		log.Info("next cycle", "in", wake.Round(time.Second).String(), "next_discovery", next.Format(time.RFC3339))
		select {
		case <-ctx.Done():
			log.Info("stopping")
			return exitOK
		case <-time.After(max(wake, time.Second)):
		}
	}
}

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
