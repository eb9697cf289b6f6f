package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

func init() {
	register("explain", "show what the crawl space decides for URLs, and why", runExplain)
}

func runExplain(args []string) int { return explain(args, os.Stdout, os.Stderr) }

// explanation is one line of `explain -json`, fields in the order of DESIGN.md.
type explanation struct {
	URL      string `json:"url"`
	Source   string `json:"source"`
	Crawl    bool   `json:"crawl"`
	Index    bool   `json:"index"`
	Follow   bool   `json:"follow"`
	Priority int    `json:"priority"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule"`
}

func explain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawlspace explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	offline := fs.Bool("offline", false, "decide from the config alone: no DNS lookups, no robots.txt")
	depth := fs.Int("depth", 0, "links from a start URL, for max_link_depth")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawlspace explain -config F [-json] [-offline] [-depth N] URL...")
		fs.PrintDefaults()
	}
	// Flags may follow the URLs too: "explain -config F URL -json".
	var urls []string
	for {
		if err := fs.Parse(args); err != nil {
			return exitUsage
		}
		if fs.NArg() == 0 {
			break
		}
		urls = append(urls, fs.Arg(0))
		args = fs.Args()[1:]
	}
	if len(urls) == 0 {
		fs.Usage()
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, stderr)
	if !ok {
		return exitUsage
	}
	for _, w := range set.Warnings() {
		fmt.Fprintln(stderr, "warning:", w)
	}

	ex := &explainer{cfg: cfg, offline: *offline, stderr: stderr}
	if !*offline {
		client := &http.Client{Timeout: cfg.Fetch.Timeout.D()}
		ex.robots = robots.NewCache(robots.HTTPFetcher(client, cfg.UserAgent), robots.CacheOptions{UserAgent: cfg.UserAgent})
	}
	var lines []explanation
	for _, raw := range urls {
		lines = append(lines, ex.explain(set, raw, *depth))
	}

	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetEscapeHTML(false)
		for _, l := range lines {
			if err := enc.Encode(l); err != nil {
				fmt.Fprintln(stderr, "crawlspace explain:", err)
				return exitFailed
			}
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URL\tSOURCE\tCRAWL\tINDEX\tFOLLOW\tPRIORITY\tREASON\tRULE")
	for _, l := range lines {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", l.URL, dash(l.Source), yesNo(l.Crawl), yesNo(l.Index),
			yesNo(l.Follow), l.Priority, dash(l.Reason), dash(l.Rule))
	}
	if err := tw.Flush(); err != nil {
		return exitFailed
	}
	return exitOK
}

// explainer decides URLs for explain, with a robots.txt cache of its own
// (or none, offline).
type explainer struct {
	cfg     *config.Config
	offline bool
	robots  *robots.Cache
	stderr  io.Writer
}

// explain decides one URL: the crawl space first, then, live, the address
// its host resolves to and its robots.txt, as the crawler would.
func (ex *explainer) explain(set *rules.Set, raw string, depth int) explanation {
	src, u, d, err := set.RouteRaw(raw, depth)
	if err != nil {
		fmt.Fprintf(ex.stderr, "crawlspace explain: %v\n", err)
	}
	if src == nil || !d.Crawl || ex.offline {
		return line(u, src, d)
	}
	timeout := ex.cfg.Fetch.Timeout.D()
	if timeout <= 0 {
		timeout = time.Minute
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	if refused, ok := ex.address(ctx, src, u); ok {
		return line(u, src, refused)
	}
	if ex.robots != nil && config.Bool(ex.cfg.Sources[sourceIndex(ex.cfg, src.Name)].Robots.Obey, true) {
		pu, perr := url.Parse(u)
		if perr == nil {
			allowed, rule, rerr := ex.robots.Allowed(ctx, pu)
			switch {
			case rerr != nil && !errors.Is(rerr, robots.ErrUnavailable):
				fmt.Fprintf(ex.stderr, "crawlspace explain: robots.txt for %s: %v\n", u, rerr)
			case !allowed:
				d = rules.Decision{Source: d.Source, Reason: rules.ReasonRobots, Rule: robotsRule(pu, rule, rerr)}
			}
		}
	}
	return line(u, src, d)
}

// address resolves u's host and applies the source's address rules; the
// URL is refused only when every address is, since the fetcher would try
// the others.
func (ex *explainer) address(ctx context.Context, src *rules.Source, u string) (rules.Decision, bool) {
	p, ok := urlnorm.Split(u)
	if !ok {
		return rules.Decision{}, false
	}
	var addrs []netip.Addr
	if ip, err := netip.ParseAddr(p.Host); err == nil {
		addrs = []netip.Addr{ip}
	} else {
		addrs, err = net.DefaultResolver.LookupNetIP(ctx, "ip", p.Host)
		if err != nil {
			fmt.Fprintf(ex.stderr, "crawlspace explain: %s: %v (address rules not checked)\n", p.Host, err)
			return rules.Decision{}, false
		}
	}
	var refused rules.Decision
	for _, ip := range addrs {
		d := src.DecideAddress(ip)
		if d.Crawl {
			return rules.Decision{}, false
		}
		if refused.Reason == "" {
			refused = d
		}
	}
	return refused, refused.Reason != ""
}

// robotsRule names the robots.txt line that decided, with its file's URL.
func robotsRule(u *url.URL, rule string, err error) string {
	file := u.Scheme + "://" + u.Host + "/robots.txt"
	switch {
	case err != nil:
		return err.Error()
	case rule == "":
		return file
	case strings.HasPrefix(rule, "robots.txt"):
		return file + strings.TrimPrefix(rule, "robots.txt")
	}
	return file + ": " + rule
}

func sourceIndex(cfg *config.Config, name string) int {
	for i := range cfg.Sources {
		if cfg.Sources[i].Name == name {
			return i
		}
	}
	return 0
}

func line(u string, src *rules.Source, d rules.Decision) explanation {
	e := explanation{URL: u, Crawl: d.Crawl, Index: d.Index, Follow: d.Follow, Priority: d.Priority, Reason: string(d.Reason), Rule: d.Rule}
	// An offsite URL belongs to no source.
	if src != nil && d.Reason != rules.ReasonOffsite {
		e.Source = d.Source
	}
	return e
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
