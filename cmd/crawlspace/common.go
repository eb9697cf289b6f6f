package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"syscall"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/rules"
)

// newFlags makes a flag set whose errors and usage go to stderr and that
// returns errors instead of exiting, so commands stay testable in-process.
func newFlags(name string) *flag.FlagSet {
	fs := flag.NewFlagSet("crawlspace "+name, flag.ContinueOnError)
	fs.SetOutput(os.Stderr)
	return fs
}

// loadConfig loads and validates path — its YAML, document mapping
// included, then its crawl space — printing every problem as "file:line:col: path:
// message" on stderr. ok is false when the caller must exit with exitUsage.
func loadConfig(path string, stderr io.Writer) (*config.Config, *rules.Set, bool) {
	if path == "" {
		fmt.Fprintln(stderr, "crawlspace: -config is required")
		return nil, nil, false
	}
	report := func(err error) {
		var list config.Errors
		if errors.As(err, &list) {
			for _, e := range list {
				fmt.Fprintln(stderr, e.Error())
			}
			return
		}
		fmt.Fprintf(stderr, "%s: %v\n", path, err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		report(err)
		return nil, nil, false
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		report(err)
		return nil, nil, false
	}
	return cfg, set, true
}

// newLogger builds the structured log from the config and the -v/-quiet flags.
func newLogger(cfg *config.Config, w io.Writer, verbose, quiet bool) *slog.Logger {
	level := slog.LevelInfo
	switch cfg.Log.Level {
	case "debug":
		level = slog.LevelDebug
	case "warn":
		level = slog.LevelWarn
	case "error":
		level = slog.LevelError
	}
	if verbose {
		level = slog.LevelDebug
	}
	if quiet {
		level = slog.LevelError
	}
	opts := &slog.HandlerOptions{Level: level}
	if cfg.Log.Format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// cycleCommand is what crawl, run and reindex share: their flags, the
// loaded configuration, the output and a context that ends on SIGINT or
// SIGTERM, so an interrupted cycle stops cleanly and resumes next time.
type cycleCommand struct {
	cfg        *config.Config
	set        *rules.Set
	out        output
	reportPath string
	ctx        context.Context
	stop       context.CancelFunc
}

// parseCycleCommand parses the shared flags; code is the exit code to
// return when ok is false. The caller must call stop.
func parseCycleCommand(name, reportHelp string, args []string) (cc cycleCommand, code int, ok bool) {
	fs := newFlags(name)
	path := fs.String("config", "", "configuration file")
	reportPath := fs.String("report", "", reportHelp)
	verbose := fs.Bool("v", false, "log every URL decision (debug level)")
	quiet := fs.Bool("quiet", false, "log errors only and print no summary")
	if err := fs.Parse(args); err != nil {
		return cc, exitUsage, false
	}
	cfg, set, loaded := loadConfig(*path, os.Stderr)
	if !loaded {
		return cc, exitUsage, false
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	return cycleCommand{cfg: cfg, set: set, out: newOutput(cfg, os.Stderr, os.Stdout, *verbose, *quiet),
		reportPath: *reportPath, ctx: ctx, stop: stop}, exitOK, true
}
