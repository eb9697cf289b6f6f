package main

import (
	"context"
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("confirm-deletes", "send now the deletes a source's hold_deletes holds", runConfirmDeletes)
}

// runConfirmDeletes sends the deletes a source's guard held at the end of
// a cycle (docs/operating.md, "Deletes held"): the operator's word that
// what the source lost is gone. The crawler's ConfirmDeletes does it; the
// command only opens the state store and the sink around it.
func runConfirmDeletes(args []string) int {
	fs := newFlags("confirm-deletes")
	path := fs.String("config", "", "configuration file")
	source := fs.String("source", "", "the source whose held deletes are sent (required)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	if *source == "" {
		fmt.Fprintln(os.Stderr, "crawlspace confirm-deletes: -source is required")
		return exitUsage
	}
	if cfg.SourceByName(*source) == nil {
		fmt.Fprintf(os.Stderr, "crawlspace confirm-deletes: no source named %q in %s\n", *source, cfg.File)
		return exitUsage
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := newLogger(cfg, os.Stderr, false, false)
	c, err := provider.NewMaintenance(cfg, set, sink.Opener(ctx, cfg), log)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace confirm-deletes: %v\n", err)
		return exitFailed
	}
	target := c.Target()
	n, err := c.ConfirmDeletes(ctx, *source)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace confirm-deletes: %v\n", err)
		return exitFailed
	}
	if n == 0 {
		fmt.Printf("no delete of source %s is held\n", *source)
		return exitOK
	}
	fmt.Printf("%d held delete(s) of source %s sent to %s\n", n, *source, target)
	return exitOK
}
