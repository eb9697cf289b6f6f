package main

import (
	"fmt"
	"os"

	"github.com/crawlspace/crawlspace/frontier"
)

func init() {
	register("clear-errors", "queue every URL in error again (FDSE's Clear Error Cache)", runClearErrors)
}

func runClearErrors(args []string) int {
	fs := newFlags("clear-errors")
	path := fs.String("config", "", "configuration file")
	source := fs.String("source", "", "only this source (default: every source)")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, _, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	if *source != "" && cfg.SourceByName(*source) == nil {
		fmt.Fprintf(os.Stderr, "crawlspace clear-errors: no source named %q in %s\n", *source, cfg.File)
		return exitUsage
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace clear-errors: %v\n", err)
		return exitFailed
	}
	defer front.Close()
	n, err := front.RequeueErrors(*source)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace clear-errors: %v\n", err)
		return exitFailed
	}
	fmt.Printf("%d URL(s) in error queued again; the next crawl fetches them\n", n)
	return exitOK
}
