package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

func init() {
	register("explain", "show what the crawl space decides for URLs, and why", runExplain)
}

func runExplain(args []string) int { return explain(args, os.Stdout, os.Stderr) }

// explanation is one line of `explain -json`: the fields docs/commands.md lists,
// in that order, ending with the URL that would be fetched.
type explanation struct {
	// URL is the URL as found (urlnorm.Found, its query as written): what
	// the rules and robots.txt judge.
	URL      string `json:"url"`
	Source   string `json:"source"`
	Crawl    bool   `json:"crawl"`
	Index    bool   `json:"index"`
	Follow   bool   `json:"follow"`
	Priority int    `json:"priority"`
	Reason   string `json:"reason"`
	Rule     string `json:"rule"`
	// Fetch is what the source's query filter makes of URL: the URL
	// requested if it is crawled.
	Fetch string `json:"fetch"`
	// Key is the URL the page is queued, stored and indexed under: Fetch
	// with its parameters sorted (see `status -url`).
	Key string `json:"key"`
	// Auth is the authentication a request for Fetch gets from the
	// source: the method and user, never a secret; "" without an auth block.
	Auth string `json:"auth,omitempty"`
	// Render says how a crawled URL's HTML page is rendered in the
	// browser before it is read ("wait network_idle, timeout 20s", then
	// the config entry that decided); "" when it is read as fetched.
	Render string `json:"render,omitempty"`
	// Delay is the pause the crawler keeps between two requests to a
	// crawled URL's host, and why: politeness.delay, or the host's
	// robots.txt Crawl-delay (read live) and whether
	// politeness.max_crawl_delay cut it; "" when it keeps none.
	Delay string `json:"delay,omitempty"`
}

// withRender fills in whether and how a crawled URL's page is rendered.
func withRender(set *rules.Set, e explanation) explanation {
	if !e.Crawl || e.Source == "" {
		return e
	}
	if rs := set.Source(e.Source); rs != nil {
		if r := rs.Render(e.Fetch); r != nil {
			e.Render = "wait " + r.Wait
			if r.Wait == "element" {
				e.Render += " " + strconv.Quote(r.Selector)
			}
			e.Render += ", timeout " + r.Timeout.String()
			if r.Rule != "" {
				e.Render += " (" + r.Rule + ")"
			}
		}
	}
	return e
}

// withAuth fills in the authentication a line's URL gets.
func withAuth(cfg *config.Config, set *rules.Set, e explanation) explanation {
	if e.Source == "" {
		return e
	}
	if rs := set.Source(e.Source); rs != nil {
		e.Auth = fetch.AuthFor(cfg.SourceByName(e.Source), rs.StartURLs(), e.Fetch)
	}
	return e
}

func explain(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("crawlspace explain", flag.ContinueOnError)
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file")
	asJSON := fs.Bool("json", false, "print one JSON object a line")
	offline := fs.Bool("offline", false, "decide from the config alone: no DNS lookups, no robots.txt")
	depth := fs.Int("depth", 0, "links from a start URL, for max_link_depth")
	page := fs.String("page", "", "a saved page (HTML) to map as the document of the one URL given, showing which rule filled which field")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: crawlspace explain -config F [-json] [-offline] [-depth N] URL...")
		fmt.Fprintln(stderr, "       crawlspace explain -config F [-json] [-offline] -page FILE URL")
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
	if len(urls) == 0 || *page != "" && len(urls) != 1 {
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

	ex := &explainer{cfg: cfg, set: set, offline: *offline, stderr: stderr, told: map[string]bool{}}
	if !*offline {
		// robots.txt is read as the crawl reads it: with the source's
		// credentials, proxy, CA and address rules.
		fetchers, err := fetch.NewSet(cfg, set, fetch.Options{})
		if err != nil {
			fmt.Fprintln(stderr, "crawlspace explain:", err)
			return exitFailed
		}
		ex.robots = robots.NewCache(fetchers.Robots, robots.CacheOptions{UserAgent: cfg.UserAgent})
	}
	var lines []explanation
	for _, raw := range urls {
		lines = append(lines, withRender(set, withAuth(cfg, set, ex.explain(set, raw, *depth))))
	}
	var mapped *pageFields
	if *page != "" {
		var code int
		if mapped, code = mapPage(cfg, set, lines[0], *page, stderr); mapped == nil {
			return code
		}
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
		if mapped != nil {
			if err := enc.Encode(mapped); err != nil {
				fmt.Fprintln(stderr, "crawlspace explain:", err)
				return exitFailed
			}
		}
		return exitOK
	}
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "URL\tFETCH\tKEY\tSOURCE\tCRAWL\tINDEX\tFOLLOW\tPRIORITY\tREASON\tRULE\tAUTH\tRENDER\tDELAY")
	for _, l := range lines {
		fetch, key := l.Fetch, l.Key
		if fetch == l.URL {
			fetch = "="
		}
		if key == l.Fetch {
			key = "="
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\t%s\n", l.URL, dash(fetch), dash(key), dash(l.Source), yesNo(l.Crawl), yesNo(l.Index),
			yesNo(l.Follow), l.Priority, dash(l.Reason), dash(l.Rule), dash(l.Auth), dash(l.Render), dash(l.Delay))
	}
	if err := tw.Flush(); err != nil {
		return exitFailed
	}
	if mapped != nil {
		fmt.Fprintln(stdout)
		if err := mapped.print(stdout); err != nil {
			return exitFailed
		}
	}
	return exitOK
}

// explainer decides URLs for explain, with a robots.txt cache of its own
// (or none, offline).
type explainer struct {
	cfg     *config.Config
	set     *rules.Set
	offline bool
	robots  *robots.Cache
	stderr  io.Writer
	// told holds the notes already printed, so each is said once.
	told map[string]bool
}

// note prints a note on stderr once.
func (ex *explainer) note(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if !ex.told[msg] {
		ex.told[msg] = true
		fmt.Fprintln(ex.stderr, "crawlspace explain: "+msg)
	}
}

// explain decides one URL as the crawler would a link: the crawl space
// judges it as found, then what the query filter makes of it; then the
// address its host has and, live, its robots.txt.
func (ex *explainer) explain(set *rules.Set, raw string, depth int) explanation {
	found, err := urlnorm.Found(raw)
	if err != nil {
		fmt.Fprintf(ex.stderr, "crawlspace explain: %v\n", err)
		return explanation{URL: raw, Reason: string(rules.ReasonInvalid)}
	}
	src, u, d := set.Route(found, depth, nil)
	if src == nil || !d.Crawl {
		return line(found, src, d)
	}
	ctx, cancel := context.WithTimeout(context.Background(), ex.cfg.Fetch.Timeout.D())
	defer cancel()
	if refused, ok := ex.address(ctx, src, u); ok {
		return line(found, src, refused)
	}
	if ex.offline {
		return ex.withDelay(line(found, src, d), u, 0)
	}
	var crawlDelay time.Duration
	if ex.robots != nil && *ex.cfg.Sources[sourceIndex(ex.cfg, src.Name)].Robots.Obey {
		rule, refused, delay := ex.robotsRefuse(ctx, found, src.Fetch(found))
		if refused {
			d = rules.Decision{Source: d.Source, Reason: rules.ReasonRobots, Rule: rule}
		}
		crawlDelay = delay
	}
	return ex.withDelay(line(found, src, d), u, crawlDelay)
}

// robotsRefuse asks robots.txt, live, about the URL as found and the URL
// requested, as the crawler does before a fetch: refused when it refuses
// either, rule saying which line; otherwise the host's Crawl-delay, when
// robots.txt was read.
func (ex *explainer) robotsRefuse(ctx context.Context, found, fetch string) (rule string, refused bool, crawlDelay time.Duration) {
	pu, err := url.Parse(found)
	if err != nil {
		return "", false, 0
	}
	r, err := ex.robots.Get(ctx, pu)
	if err != nil && !errors.Is(err, robots.ErrUnavailable) {
		fmt.Fprintf(ex.stderr, "crawlspace explain: robots.txt for %s: %v\n", found, err)
		return "", false, 0
	}
	for _, u := range []string{found, fetch} {
		if allowed, line := r.Test(ex.cfg.UserAgent, urlnorm.RequestTarget(u)); !allowed {
			return robotsRule(pu, line, err), true, 0
		}
	}
	if err == nil {
		crawlDelay = r.CrawlDelay(robots.ProductToken(ex.cfg.UserAgent))
	}
	return "", false, crawlDelay
}

// withDelay says what pause the crawler keeps between two requests to a
// crawled URL's host, as the crawl does (provider.PolitenessDelay), with
// its host's robots.txt Crawl-delay when one was read.
func (ex *explainer) withDelay(e explanation, u string, crawlDelay time.Duration) explanation {
	if !e.Crawl {
		return e
	}
	if d := provider.PolitenessDelay(ex.cfg, ex.set, urlnorm.Origin(u), crawlDelay); d.Delay > 0 {
		e.Delay = d.String()
	}
	return e
}

// address applies the source's address rules and allow_private_networks
// to the addresses u's host name resolves to, live, as the crawler's
// dialer does; an IP-literal host was judged with the URL, offline too. The
// URL is refused only when every address is, since the fetcher would try
// the others. Behind fetch.proxy the only address dialled is the proxy's,
// so the crawler judges no address and neither does this.
func (ex *explainer) address(ctx context.Context, src *rules.Source, u string) (rules.Decision, bool) {
	p, ok := urlnorm.Split(u)
	if !ok || !src.JudgesAddresses() {
		return rules.Decision{}, false
	}
	if ex.cfg.Fetch.Proxy != "" {
		ex.note("fetch.proxy is set: the crawler dials only the proxy, so address rules and allow_private_networks are not applied")
		return rules.Decision{}, false
	}
	if _, literal := rules.LiteralAddress(p.Host); literal {
		return rules.Decision{}, false
	}
	if ex.offline {
		ex.note("%s: offline, a host name's address is unknown: address rules and allow_private_networks not checked", p.Host)
		return rules.Decision{}, false
	}
	addrs, err := net.DefaultResolver.LookupNetIP(ctx, "ip", p.Host)
	if err != nil {
		ex.note("%s: %v (address rules not checked)", p.Host, err)
		return rules.Decision{}, false
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

// line is the explanation of found, a URL as found, decided d by src (nil
// when no source holds it).
func line(found string, src *rules.Source, d rules.Decision) explanation {
	fetch, key := found, found
	if src != nil {
		fetch, key = src.Fetch(found), src.Key(found)
	}
	e := explanation{URL: found, Fetch: fetch, Key: key, Crawl: d.Crawl, Index: d.Index, Follow: d.Follow, Priority: d.Priority, Reason: string(d.Reason), Rule: d.Rule}
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
