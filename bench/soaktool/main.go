// Command soaktool is bench/soak's engine: it runs `crawlspace run` for a set time against an
// ordinary site that changes, hostile sites (a spider trap, compression bombs, dripping pages,
// redirect loops, lying charsets) and an Elasticsearch node behind a fault-injection proxy, then
// checks that the index equals what the ordinary site serves, that memory stayed bounded, that
// no host got more than its politeness allowed, that every fault happened and that the service
// stopped cleanly on SIGTERM; beside it, two `crawlspace run` processes share a crawl whose state
// node refuses connections mid-crawl, and must finish it. bench/README.md describes the schedule
// and each check.
//
//	soaktool -crawlspace BIN -dir DIR [-es URL] [-index NAME] [-duration 10m] [-seed N]
//	         [-pages N] [-bomb-mib N] [-max-rss-mb N] [-max-state-mb N] [-exit-within D]
//	         [-cluster=false] [-out FILE] [-line TEXT]...
//
// It prints the results as Markdown, writes them to -out too, and exits 1 when a check fails.
package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"
)

type lines []string

func (l *lines) String() string     { return strings.Join(*l, "\n") }
func (l *lines) Set(v string) error { *l = append(*l, v); return nil }

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("soaktool", flag.ContinueOnError)
	o := Options{Progress: os.Stderr}
	var out string
	var extra lines
	var bombMiB int64
	fs.StringVar(&o.ES, "es", "http://127.0.0.1:9200", "the Elasticsearch node's base URL")
	fs.StringVar(&o.Crawlspace, "crawlspace", "", "the crawlspace binary (required)")
	fs.StringVar(&o.Dir, "dir", "", "the run's directory: config, state, logs (required)")
	fs.StringVar(&o.Index, "index", fmt.Sprintf("soak-%d", os.Getpid()), "the alias the service writes to; its indices are deleted at the end")
	fs.DurationVar(&o.Duration, "duration", 10*time.Minute, "how long the service runs")
	fs.Uint64Var(&o.Seed, "seed", 1, "seed of the sites and of the changes")
	fs.IntVar(&o.Pages, "pages", 300, "pages of the ordinary site at the start")
	fs.Int64Var(&bombMiB, "bomb-mib", 1024, "decoded size of each compression bomb, MiB")
	fs.Int64Var(&o.MaxRSSMB, "max-rss-mb", 500, "bound on the service's peak anonymous memory (RssAnon), MiB")
	fs.Int64Var(&o.MaxStateMB, "max-state-mb", 64, "bound on the state directory at the end, MiB")
	fs.DurationVar(&o.ExitWithin, "exit-within", 20*time.Second, "how soon after SIGTERM the service must exit")
	fs.BoolVar(&o.Cluster, "cluster", true, "also run two crawlspace processes sharing a crawl whose state node is refused mid-crawl")
	fs.StringVar(&out, "out", "", "also write the Markdown results to this file")
	fs.Var(&extra, "line", "a line for the results' header (repeatable)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if o.Crawlspace == "" || o.Dir == "" || fs.NArg() > 0 || o.Duration < time.Minute || o.Pages < 20 || bombMiB < 16 {
		fmt.Fprintln(os.Stderr, "soaktool: -crawlspace and -dir are required; -duration at least 1m, -pages at least 20, -bomb-mib at least 16")
		return 2
	}
	o.BombSize = bombMiB << 20

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := Run(ctx, o)
	if derr := (es{base: o.ES}).deleteIndices(o.Index); derr != nil {
		fmt.Fprintf(os.Stderr, "soaktool: removing the soak's indices: %v\n", derr)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "soaktool: %v\n", err)
		return 1
	}
	var md bytes.Buffer
	res.markdown(&md, fmt.Sprintf("crawlspace soak: %v", o.Duration), extra)
	os.Stdout.Write(md.Bytes())
	if err := res.writeDetails(o.Dir); err != nil {
		fmt.Fprintf(os.Stderr, "soaktool: %v\n", err)
	}
	if out != "" {
		if err := os.WriteFile(out, md.Bytes(), 0o644); err != nil {
			fmt.Fprintf(os.Stderr, "soaktool: %v\n", err)
			return 1
		}
	}
	if !res.Passed() {
		return 1
	}
	return 0
}
