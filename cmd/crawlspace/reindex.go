package main

import (
	"context"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("reindex", "re-apply the config to every known document, then crawl", runReindex)
}

// runReindex deletes what no longer belongs to the crawl space, queues
// every document to be fetched and written again (its meaning may have
// changed: new extra fields, a new add_meta, a kill pattern), and runs a
// cycle that does it.
func runReindex(args []string) int {
	cc, code, ok := parseCycleCommand("reindex", "write the crawl report as JSON to this file", args)
	if !ok {
		return code
	}
	defer cc.stop()
	cfg, set, o, ctx := cc.cfg, cc.set, cc.out, cc.ctx
	log := o.log
	c, err := provider.New(cfg, set, sink.Opener(ctx, cfg), log)
	if err != nil {
		log.Error("cannot start", "err", err)
		return exitFailed
	}
	if err := c.Reapply(); err != nil {
		log.Error("cannot re-apply the crawl space", "err", err)
		c.Close()
		return exitFailed
	}
	n, err := c.Rewrite()
	if err != nil {
		log.Error("cannot queue the documents", "err", err)
		c.Close()
		return exitFailed
	}
	log.Info("documents queued to be fetched and written again", "count", n)
	return finishCycle(ctx, cfg, c, o, cc.reportPath)
}

// finishCycle runs one cycle of every source, closes the crawler and reports.
func finishCycle(ctx context.Context, cfg *config.Config, c *provider.Crawler, o output, reportPath string) int {
	log := o.log
	stopProgress := o.watch(ctx, c, monitor.NewStates(c.Store(), cfg))
	report, crawlErr := c.Crawl(ctx)
	stopProgress()
	closeErr := c.Close()
	if reportPath != "" {
		if err := report.WriteFile(reportPath); err != nil {
			log.Error("cannot write the report", "path", reportPath, "err", err)
			return exitFailed
		}
	}
	report.Summary(o.summary)
	switch {
	case crawlErr != nil:
		log.Error("crawl did not complete", "err", crawlErr)
		return exitFailed
	case closeErr != nil:
		log.Error("closing the sink or state store failed", "err", closeErr)
		return exitFailed
	}
	return exitOK
}
