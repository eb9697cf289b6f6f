package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("crawl", "run one crawl cycle of every source, then exit", runCrawl)
}

func runCrawl(args []string) int {
	fs := newFlags("crawl")
	path := fs.String("config", "", "configuration file")
	reportPath := fs.String("report", "", "write the crawl report as JSON to this file")
	verbose := fs.Bool("v", false, "log every URL decision (debug level)")
	quiet := fs.Bool("quiet", false, "log errors only and print no summary")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	log := newLogger(cfg, os.Stderr, *verbose, *quiet)
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var out io.Writer = os.Stdout
	if *quiet {
		out = io.Discard
	}
	return crawlOnce(ctx, cfg, set, log, out, *reportPath)
}

// crawlOnce runs one cycle into the configured sink and reports it.
func crawlOnce(ctx context.Context, cfg *config.Config, set *rules.Set, log *slog.Logger, out io.Writer, reportPath string) int {
	report, snk, err := openSink(ctx, cfg)
	if err != nil {
		log.Error("cannot open the sink", "err", err)
		return exitFailed
	}
	c, err := provider.New(cfg, set, snk, report, log)
	if err != nil {
		log.Error("cannot start the crawl", "err", err)
		return exitFailed
	}
	defer c.Close()
	crawlErr := c.Crawl(ctx)
	closeCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Minute)
	defer cancel()
	closeErr := snk.Close(closeCtx)
	report.Finish()
	if reportPath != "" {
		if err := report.WriteFile(reportPath); err != nil {
			log.Error("cannot write the report", "path", reportPath, "err", err)
			return exitFailed
		}
	}
	report.Summary(out)
	switch {
	case crawlErr != nil:
		log.Error("crawl interrupted", "err", crawlErr)
		return exitFailed
	case closeErr != nil:
		log.Error("sink failed", "err", closeErr)
		return exitFailed
	}
	return exitOK
}

func openSink(ctx context.Context, cfg *config.Config) (*provider.Report, sink.Sink, error) {
	if es := cfg.Elasticsearch; es != nil {
		report := provider.NewReport("elasticsearch", es.Index)
		s, err := sink.NewElasticsearch(ctx, es, cfg.ExtraFields, report.SinkResult)
		if err != nil {
			return nil, nil, err
		}
		report.Index = s.PhysicalIndex()
		return report, s, nil
	}
	report := provider.NewReport("file "+cfg.Output.File, "")
	s, err := sink.NewFile(cfg.Output.File, cfg.Output.Index, report.SinkResult)
	if err != nil {
		return nil, nil, err
	}
	return report, s, nil
}
