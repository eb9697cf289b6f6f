package main

import (
	"flag"
	"fmt"
	"io"
	"os"
)

func init() {
	register("validate", "check a configuration file", runValidate)
}

func runValidate(args []string) int { return validate(args, os.Stdout, os.Stderr) }

// validate checks a configuration: errors on stderr and exit 2, or
// warnings (problems that do not stop a crawl) on stderr and exit 0.
func validate(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawlspace validate", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, stderr)
	if !ok {
		return exitUsage
	}
	for _, w := range set.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}
	fmt.Fprintf(stdout, "%s: ok, %d source(s)\n", cfg.File, len(cfg.Sources))
	return exitOK
}
