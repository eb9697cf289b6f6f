package provider

import (
	"fmt"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// discovered is what the URLs a page links or a sitemap lists become:
// queue items, each for the source whose crawl space holds it in the class
// its decision gives, and the URLs refused, by reason. URLs are judged as
// found; what is queued is their key, with the URL as found where it
// differs, to be requested so, and what is refused is recorded as refused
// (see Set.Route).
type discovered struct {
	items   []frontier.Item
	refused refusals
}

// add judges a URL found on a page of the source from, depth links from a
// start URL; it returns its queue item, nil when it is refused or no URL.
func (ds *discovered) add(set *rules.Set, from *rules.Source, raw string, depth int) *frontier.Item {
	found, err := urlnorm.Found(raw)
	if err != nil {
		return nil
	}
	to, u, d := set.Route(found, depth, from)
	if !d.Crawl {
		ds.refused.add(to, u, found, depth, d)
		return nil
	}
	ds.items = append(ds.items, foundItem(to, u, found, depth, d))
	return &ds.items[len(ds.items)-1]
}

// queueItem is the item of url for source, written found on the site
// ("" when it is url), depth links from a start URL, in class at the
// priority shift. It is the one place a frontier.Item is made.
func queueItem(source, url, found string, depth int, class frontier.Class, shift int) frontier.Item {
	it := frontier.Item{URL: url, Source: source, Depth: depth, Class: class, Shift: shift}
	it.SetFoundAs(found)
	return it
}

// foundItem is the queue item of u, written found, depth links from a
// start URL, which to's crawl space holds with decision d.
func foundItem(to *rules.Source, u, found string, depth int, d rules.Decision) frontier.Item {
	return queueItem(to.Name, u, found, depth, classOf(d), d.Priority)
}

// reportRefused counts the refused URLs a stored outcome recorded for the
// first time.
func (c *Crawler) reportRefused(fd *frontier.Found) {
	for _, rf := range fd.Refused {
		if rf.New > 0 {
			c.reportNow().ReasonN(rf.Items[0].Source, rf.Items[0].URL, rf.Reason, rf.Detail, rf.New)
		}
	}
}

// refusals collects the URLs a page or sitemap lists that the crawl space
// refuses, by reason, to be recorded in one write per reason.
type refusals struct {
	byReason map[rules.Reason][]frontier.Item
	rule     map[rules.Reason]string // one deciding rule per reason, for the report's examples
	// unstorable are refused URLs longer than the store can record (any
	// over-long URL is refused: url_too_long at the latest): they are
	// counted and reported, never stored.
	unstorable map[uint64]unstorable
}

type unstorable struct {
	source, url string
	reason      rules.Reason
	rule        string
}

func (r *refusals) add(to *rules.Source, u, found string, depth int, d rules.Decision) {
	name := ""
	if to != nil {
		name = to.Name
	}
	if len(u) > urlnorm.MaxLength {
		if r.unstorable == nil {
			r.unstorable = map[uint64]unstorable{}
		}
		r.unstorable[frontier.LinkKey(u)] = unstorable{name, u, d.Reason, d.Rule}
		return
	}
	if r.byReason == nil {
		r.byReason, r.rule = map[rules.Reason][]frontier.Item{}, map[rules.Reason]string{}
	}
	it := queueItem(name, u, found, depth, frontier.Start, 0) // recorded refused: no class nor priority
	r.byReason[d.Reason] = append(r.byReason[d.Reason], it)
	r.rule[d.Reason] = d.Rule
}

// reportUnstorable counts the refused URLs too long to store, once per page
// or sitemap that lists them: the store cannot remember them across pages.
// The example is cut short, so a report never carries a 40 KB URL.
func (c *Crawler) reportUnstorable(r *refusals) {
	for _, u := range r.unstorable {
		detail := fmt.Sprintf("%d bytes, more than the state store holds (%d)", len(u.url), urlnorm.MaxLength)
		if u.rule != "" {
			detail = u.rule + ": " + detail
		}
		c.reportNow().ReasonN(u.source, shortURL(u.url), string(u.reason), detail, 1)
	}
}

// shortURL cuts a URL to a length fit for a report or a log line.
func shortURL(u string) string {
	const keep = 200
	if len(u) <= keep {
		return u
	}
	cut := keep
	for cut > 0 && !utf8.RuneStart(u[cut]) {
		cut--
	}
	return u[:cut] + "…"
}

// recordRefusals stores refused URLs as Excluded with their reason and
// counts those seen for the first time, so the report counts URLs, not links.
func (c *Crawler) recordRefusals(r *refusals) {
	c.reportUnstorable(r)
	for reason, items := range r.byReason {
		n, err := c.front.Exclude(string(reason), items...)
		if err != nil {
			c.log.Error("cannot record refused URLs", "url", items[0].URL, "source", items[0].Source, "reason", string(reason), "count", len(items), "err", err)
			continue
		}
		if n == 0 {
			continue
		}
		src := items[0].Source
		c.reportNow().ReasonN(src, items[0].URL, string(reason), r.rule[reason], n)
	}
}

// classOf is Exalead's fifo for a discovered URL.
func classOf(d rules.Decision) frontier.Class {
	switch {
	case d.Index && d.Follow:
		return frontier.IndexFollow
	case d.Index:
		return frontier.IndexOnly
	default:
		return frontier.FollowOnly
	}
}
