package main

import (
	"context"
	"io"
	"log/slog"
	"os"
	"sync"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
)

// output is where a crawling command's log, progress and summary go.
type output struct {
	log *slog.Logger
	// progress is nil with -quiet.
	progress *monitor.Progress
	// summary receives the end-of-cycle summary (io.Discard with -quiet).
	summary io.Writer
}

// newOutput sets up the log on stderr and, unless quiet, the progress: on
// a terminal, lines redrawn in place (log lines are written above them);
// elsewhere, a log line per source every 30 seconds.
func newOutput(cfg *config.Config, stderr *os.File, stdout io.Writer, verbose, quiet bool) output {
	o := output{summary: stdout}
	var logw io.Writer = stderr
	if quiet {
		o.summary = io.Discard
	} else {
		o.progress = &monitor.Progress{Terminal: monitor.IsTerminal(stderr), Out: stderr}
		for i := range cfg.Sources {
			o.progress.Sources = append(o.progress.Sources, cfg.Sources[i].Name)
		}
		logw = o.progress.Writer(stderr)
	}
	o.log = newLogger(cfg, logw, verbose, quiet)
	if o.progress != nil {
		o.progress.Log = o.log
	}
	return o
}

// watch shows c's progress until the returned stop is called.
func (o output) watch(ctx context.Context, c *provider.Crawler, states *monitor.States) (stop func()) {
	if o.progress == nil {
		return func() {}
	}
	o.progress.Report = c.Current
	o.progress.States = states
	// Counted from the start, so the first progress line has the queue.
	states.Kick()
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() { o.progress.Run(ctx) })
	return func() {
		cancel()
		wg.Wait()
	}
}
