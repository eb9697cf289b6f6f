package main

import (
	"context"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("crawl", "run one crawl cycle of every source, then exit", runCrawl)
}

func runCrawl(args []string) int {
	cc, code, ok := parseCycleCommand("crawl", "write the crawl report as JSON to this file", args)
	if !ok {
		return code
	}
	defer cc.stop()
	return crawlOnce(cc.ctx, cc.cfg, cc.set, cc.out, cc.reportPath)
}

// crawlOnce runs one cycle into the configured sink and reports it.
func crawlOnce(ctx context.Context, cfg *config.Config, set *rules.Set, o output, reportPath string) int {
	c, err := provider.New(cfg, set, sink.Opener(ctx, cfg), o.log)
	if err != nil {
		o.log.Error("cannot start the crawl", "err", err)
		return exitFailed
	}
	return finishCycle(ctx, cfg, c, o, reportPath)
}
