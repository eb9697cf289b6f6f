package provider

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/robots"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sitemap"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// listing is the reading of one source's sitemaps and feeds in a cycle.
// Each file, and each hop of its redirects, is a request the crawl space
// judges as it judges a page's (DecideListing: the file is read as named,
// never through the query filter), that robots.txt must allow, and that
// waits its turn within the host's politeness like a page
// (frontier.Scheduler.Request). At most sitemap_limits.max_files files are
// read or waiting to be read, so memory holds no more of them than that.
type listing struct {
	c   *Crawler
	src *source
	lim config.Sitemaps
	// queue holds the files waiting to be read, seen the files read or
	// waiting (each is read once a cycle), taken how many were read.
	queue []listedFile
	seen  map[string]bool
	taken int
	// listed are the URLs the files listed, for the orphan walk's roots;
	// whole says every file was read whole (see storeListed).
	listed []uint64
	whole  bool
	// queued is called after URLs were queued: workers idle for want of
	// URLs look again.
	queued func()
	// full says max_files was met in this cycle: said once.
	full bool
	// left counts the files named since the last flush that are not
	// read, by reason: an index may name 50,000 of them.
	left map[string]*unread
}

// unread counts files left unread for one reason, with the first few as
// examples: as many as the report keeps.
type unread struct {
	n        int
	examples []Example
}

type listedFile struct {
	url   string
	depth int
}

// refusal is a file the crawl space or robots.txt keeps the crawler from
// requesting: no failure of the site, counted under its reason like a
// refused URL.
type refusal struct {
	url, reason, rule string
}

func (r *refusal) Error() string { return r.reason + " (" + r.rule + ")" }

// errReadBefore ends a redirect to a file read or queued already.
var errReadBefore = errors.New("read in this cycle already")

// discoverListed queues the URLs a source's sitemaps and feeds list: those
// in the config, and with use_sitemaps those robots.txt names for the start
// URLs' hosts. Child sitemaps of an index are followed to max_depth. Every
// URL passes the crawl space like a link; a file that cannot be read or
// parsed costs its own URLs only, with its reason in the report. The URLs
// listed are stored as roots for finding orphans (storeListed). It runs
// while the workers fetch what is queued, and calls queued after it queued
// URLs.
func (c *Crawler) discoverListed(ctx context.Context, src *source, queued func()) {
	l := &listing{c: c, src: src, lim: src.cfg.SitemapLimits, seen: map[string]bool{}, whole: true, queued: queued}
	for _, u := range src.cfg.Sitemaps {
		l.add(u, 0, "")
	}
	for _, u := range src.cfg.Feeds {
		l.add(u, 0, "")
	}
	if *src.cfg.UseSitemaps && *src.cfg.Robots.Obey {
		// In order: which files max_files leaves unread is the same each cycle.
		for _, host := range slices.Sorted(maps.Keys(src.fetch.Hosts())) {
			sitemaps, ok := c.sitemapsNamed(ctx, host)
			if !ok {
				l.whole = false // the sitemaps it names are unknown
				continue
			}
			for _, sm := range sitemaps {
				l.add(sm, 0, "")
			}
		}
	}
	l.flush()
	for len(l.queue) > 0 && ctx.Err() == nil {
		f := l.queue[0]
		l.queue = l.queue[1:]
		l.taken++
		l.readOne(ctx, f)
	}
	if ctx.Err() == nil {
		c.storeListed(src, l.listed, l.whole)
	}
}

// add queues a file named by parent ("" for the config and robots.txt),
// depth indexes below the first: unless max_files are read or waiting
// already, it is deeper than max_depth, the crawl space refuses it, or it
// is read or queued already. What a limit leaves unread is counted until
// flush.
func (l *listing) add(raw string, depth int, parent string) {
	if l.taken+len(l.queue) >= l.lim.MaxFiles {
		// Checked first: past it, an index's other children cost nothing.
		l.whole = false
		l.leave("sitemap_max_files", raw, fmt.Sprintf("%d files read or waiting (sitemap_limits.max_files)", l.lim.MaxFiles))
		l.overMaxFiles(raw)
		return
	}
	fu, err := urlnorm.Found(raw)
	if err != nil {
		l.whole = false
		l.leave("sitemap_malformed", shortURL(raw), err.Error())
		return
	}
	if l.seen[fu] {
		return
	}
	if depth > l.lim.MaxDepth {
		l.whole = false
		l.leave("sitemap_max_depth", fu, parent)
		return
	}
	if d := l.src.rules.DecideListing(fu); !d.Crawl {
		l.refuse(&refusal{url: fu, reason: string(d.Reason), rule: d.Rule})
		return
	}
	l.seen[fu] = true
	l.queue = append(l.queue, listedFile{fu, depth})
}

// leave counts a file left unread for reason, detail saying why.
func (l *listing) leave(reason, u, detail string) {
	if l.left == nil {
		l.left = map[string]*unread{}
	}
	t := l.left[reason]
	if t == nil {
		t = &unread{}
		l.left[reason] = t
	}
	if len(t.examples) < examplesPerReason {
		t.examples = append(t.examples, Example{URL: shortURL(u), Reason: reason, Detail: detail})
	}
	t.n++
}

// flush puts the files left unread since the last flush in the report,
// and in the log one line a reason (max_files has its own warning).
func (l *listing) flush() {
	name := l.src.cfg.Name
	for reason, t := range l.left {
		for i, e := range t.examples {
			n := 1
			if i == 0 {
				n = t.n - len(t.examples) + 1 // the examples' count, and those without one
			}
			l.c.reportNow().ReasonN(name, e.URL, reason, e.Detail, n)
		}
		if reason != "sitemap_max_files" {
			first := t.examples[0]
			l.c.log.Info("sitemap or feed not read", "url", first.URL, "source", name, "reason", reason, "detail", first.Detail, "files", t.n)
		}
	}
	clear(l.left)
}

// overMaxFiles says once a cycle, in the log and the report's warnings,
// that max_files left files unread.
func (l *listing) overMaxFiles(example string) {
	if l.full {
		return
	}
	l.full = true
	name := l.src.cfg.Name
	l.c.reportNow().Warn(fmt.Sprintf("source %s: sitemap_limits.max_files (%d) reached: the sitemaps and feeds past it are not read in this cycle", name, l.lim.MaxFiles))
	l.c.log.Warn("sitemap limit reached", "source", name, "limit", "sitemap_limits.max_files", "max_files", l.lim.MaxFiles, "example", shortURL(example))
}

// refuse counts a file the crawl space or robots.txt keeps out.
func (l *listing) refuse(r *refusal) { l.leave(r.reason, r.url, r.rule) }

// readOne reads one file and queues what it lists: its URLs, and the
// child files of an index.
func (l *listing) readOne(ctx context.Context, f listedFile) {
	c, name := l.c, l.src.cfg.Name
	defer l.flush()
	res, err := l.read(ctx, f.url)
	var refused *refusal
	switch {
	case ctx.Err() != nil || errors.Is(err, errReadBefore):
		return
	case errors.As(err, &refused):
		if refused.reason == string(rules.ReasonRobots) {
			l.whole = false // a site's robots.txt may change back
		}
		l.refuse(refused)
		return
	case res == nil:
		l.whole = false
		c.reportNow().Failure(name, f.url, "sitemap_failed", errCause(err))
		c.log.Info("sitemap or feed not read", "url", f.url, "source", name, "reason", "sitemap_failed", "err", errCause(err))
		return
	case err != nil:
		// Partial results are kept: a file broken half-way still lists its first half.
		l.whole = false
		c.reportNow().Reason(name, f.url, "sitemap_malformed", err.Error())
	}
	if res.Truncated != "" {
		l.whole = false
		c.reportNow().Reason(name, f.url, "sitemap_"+res.Truncated, "")
	}
	for _, child := range res.Sitemaps {
		l.add(child.URL, f.depth+1, f.url)
	}
	ds := discovered{items: make([]frontier.Item, 0, len(res.URLs))}
	for _, e := range res.URLs {
		if it := ds.add(c.rules, l.src.rules, e.URL, 0); it != nil {
			it.Lastmod = e.Lastmod
			l.listed = append(l.listed, frontier.LinkKey(it.URL))
		}
	}
	c.recordRefusals(&ds.refused)
	n, err := c.front.Add(ds.items...)
	if err != nil {
		c.log.Error("cannot queue sitemap URLs", "url", f.url, "source", name, "err", err)
		return
	}
	if n > 0 {
		l.queued()
	}
	c.log.Debug("sitemap read", "url", f.url, "source", name, "kind", res.Kind.String(), "urls", len(res.URLs), "queued", n)
}

// read fetches and parses one file, following its redirects hop by hop:
// each hop is judged by the crawl space before any request goes to it. A
// *refusal says which hop was refused and why.
func (l *listing) read(ctx context.Context, fu string) (*sitemap.Result, error) {
	u := fu
	for hops := 0; ; hops++ {
		res, done, err := l.request(ctx, u)
		if err != nil {
			return nil, err
		}
		if res.StatusCode < 300 || res.StatusCode >= 400 || res.StatusCode == http.StatusNotModified {
			defer done()
			defer res.Body.Close()
			if res.StatusCode != http.StatusOK {
				return nil, fmt.Errorf("HTTP %d", res.StatusCode)
			}
			// Relative feed links resolve against where the file was read.
			return sitemap.Parse(res.Body, u, sitemap.Limits{MaxBytes: l.lim.MaxBytes, MaxURLs: l.lim.MaxURLs})
		}
		loc := res.Header.Get("Location")
		res.Body.Close()
		done()
		next, err := l.redirect(u, loc, hops)
		if err != nil {
			return nil, err
		}
		u = next
	}
}

// redirect judges where a file's redirect leads: a URL the crawl space
// lets the crawler request, within fetch.max_redirects, not read yet.
func (l *listing) redirect(from, loc string, hops int) (string, error) {
	next, err := urlnorm.Resolve(from, loc)
	switch {
	case loc == "" || err != nil:
		return "", fmt.Errorf("redirect to a malformed URL %q", loc)
	case next == from:
		return "", errors.New("redirect loop")
	case hops >= l.c.cfg.Fetch.MaxRedirects:
		return "", fmt.Errorf("more than %d redirects (fetch.max_redirects)", l.c.cfg.Fetch.MaxRedirects)
	}
	if d := l.src.rules.DecideListing(next); !d.Crawl {
		return "", &refusal{url: next, reason: string(d.Reason), rule: d.Rule}
	}
	if l.seen[next] {
		return "", errReadBefore
	}
	l.seen[next] = true
	return next, nil
}

// request makes one request for a file, once robots.txt allows it and in
// a slot of its host's politeness; done frees the slot once the body is
// read. When robots.txt was fetched for it, the file waits the host's
// delay after that request, as a page does.
func (l *listing) request(ctx context.Context, u string) (*http.Response, func(), error) {
	c, src := l.c, l.src
	pu, err := url.Parse(u)
	if err != nil {
		return nil, nil, err
	}
	host := urlnorm.Origin(u)
	for {
		done, err := c.front.Request(ctx, host)
		if err != nil {
			return nil, nil, err
		}
		if *src.cfg.Robots.Obey {
			allowed, line, err := c.robotsAllow(ctx, src.cfg, pu)
			// robots.txt requested for this file: the file is a second
			// request and waits the host's delay.
			paused := c.polite.pause(host)
			var unavailable *robots.UnavailableError
			switch {
			case errors.As(err, &unavailable):
				done()
				return nil, nil, errors.New(robotsCause(unavailable))
			case err != nil:
				done()
				return nil, nil, err
			case !allowed:
				done()
				return nil, nil, &refusal{url: u, reason: string(rules.ReasonRobots), rule: pu.Scheme + "://" + pu.Host + "/" + line}
			case paused:
				done()
				continue
			}
		}
		res, err := src.fetch.Get(ctx, u, l.bodyLimit())
		if err != nil {
			done()
			var addrErr *fetch.AddressError
			if errors.As(err, &addrErr) {
				return nil, nil, &refusal{url: u, reason: addrErr.Reason, rule: addrErr.Rule}
			}
			return nil, nil, err
		}
		return res, done, nil
	}
}

// bodyLimit is what the transport may decode of a file: one byte past
// max_bytes, so that Parse tells a file cut by the limit.
func (l *listing) bodyLimit() int64 {
	maxBytes := l.lim.MaxBytes
	if maxBytes <= 0 {
		maxBytes = sitemap.DefaultMaxBytes
	}
	if maxBytes < math.MaxInt64 {
		maxBytes++
	}
	return maxBytes
}

// shareSitemaps keeps in the shared state the sitemaps a start host's
// robots.txt names, when they changed since this process last kept them.
func (c *Crawler) shareSitemaps(host string, sitemaps []string) {
	v := strings.Join(sitemaps, "\n")
	if last, ok := c.sharedSitemaps.load(host); ok && last == v {
		return
	}
	if err := c.front.PutMeta(metaRobotsSitemaps+host, []byte(v)); err != nil {
		c.log.Warn("cannot keep the sitemaps robots.txt names for the cluster", "host", host, "err", err)
		return
	}
	c.sharedSitemaps.swap(host, v)
}

// sitemapsNamed returns the sitemaps the robots.txt of a start host names;
// ok is false when they are not known. With the state shared by a cluster,
// a host another process holds is not asked: its holder's last reading is
// taken from the state, unknown until the holder has made one.
func (c *Crawler) sitemapsNamed(ctx context.Context, host string) (sitemaps []string, ok bool) {
	if c.cluster != nil && !c.cluster.Schedules(host) {
		v, err := c.front.GetMeta(metaRobotsSitemaps + host)
		if err != nil || v == nil {
			return nil, false
		}
		if len(v) == 0 {
			return nil, true
		}
		return strings.Split(string(v), "\n"), true
	}
	hu, err := url.Parse(host + "/")
	if err != nil {
		return nil, false
	}
	r, err := c.robots.Get(ctx, hu)
	if err != nil {
		return nil, false
	}
	return r.Sitemaps(), true
}
