// Command crawlspace crawls the sites a configuration names into an
// Elasticsearch index (or a _bulk NDJSON file) and keeps it in step with them.
//
// This package only parses flags and wires the parts together; each
// subcommand lives in a file of its own and registers itself in init.
package main

import (
	"fmt"
	"os"
	"runtime/debug"
	"sort"

	"github.com/crawlspace/crawlspace/document/pdf"
)

// Exit codes shared by every subcommand.
const (
	exitOK     = 0
	exitFailed = 1 // the command ran and something went wrong (a fetch, the sink)
	exitUsage  = 2 // bad flags or a bad configuration: nothing was requested
)

type command struct {
	summary string
	run     func(args []string) int
}

var commands = map[string]command{}

func register(name, summary string, run func(args []string) int) {
	commands[name] = command{summary: summary, run: run}
}

func main() {
	// A PDF is read in a copy of this process: see document/pdf.
	pdf.Worker()
	tuneGC()
	os.Exit(dispatch(os.Args[1:]))
}

// tuneGC trades memory the crawler barely uses for CPU it spends on every
// page. Its live heap is small (the scheduler, the seen set, the pages in
// flight) and its garbage is page-sized buffers, so the default GOGC of 100
// collects several times per second of crawling; at 400 it collects a
// quarter as often. But GOGC=400 lets the heap grow to five times what is
// live, and what is live grows with the crawl (the seen set, the orphan
// walk at the end of a cycle): a million-page crawl reached 536 MiB of
// anonymous memory under a 1 GiB limit; its live heap was 104 MB in the
// cycle's last seconds. The soft limit brings collections back before
// the heap passes defaultMemoryLimit, which binds only once the live heap
// passes a fifth of it. GOGC and GOMEMLIMIT in the environment win.
func tuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
	if os.Getenv("GOMEMLIMIT") == "" {
		debug.SetMemoryLimit(defaultMemoryLimit)
	}
}

const defaultMemoryLimit = 384 << 20

func dispatch(args []string) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		usage()
		if len(args) == 0 {
			return exitUsage
		}
		return exitOK
	}
	c, ok := commands[args[0]]
	if !ok {
		fmt.Fprintf(os.Stderr, "crawlspace: unknown command %q\n\n", args[0])
		usage()
		return exitUsage
	}
	stop := startProfiles()
	defer stop()
	return c.run(args[1:])
}

func usage() {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(os.Stderr, "usage: crawlspace <command> [flags]\n\ncommands:")
	for _, n := range names {
		fmt.Fprintf(os.Stderr, "  %-9s %s\n", n, commands[n].summary)
	}
}
