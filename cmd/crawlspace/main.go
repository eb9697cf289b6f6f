// Command crawlspace crawls the sites a configuration names into an
// Elasticsearch index (or a _bulk NDJSON file) and keeps it in step with them.
//
// This package only parses flags and wires the parts together; each
// subcommand lives in a file of its own and registers itself in init.
package main

import (
	"fmt"
	"os"
	"sort"
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
	os.Exit(dispatch(os.Args[1:]))
}

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
