package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// An operator's requests to the running crawl (the control API,
// docs/api.md): a source's discovery now, a source paused and resumed, URLs
// crawled again or taken out at once. Each is kept in the state store, so
// it holds across restarts and, with a shared store, for every process.

const (
	// metaPaused + source name holds the source's Pause while it is paused.
	metaPaused = "paused/"
	// ReasonRemoved is the reason of a URL a request took out of the
	// crawl: it stays out, linked or listed again, until a request to
	// crawl it names it.
	ReasonRemoved = "removed_by_request"
	// removeWait bounds how long Remove waits for a worker fetching one of
	// its URLs to finish with it.
	removeWait = time.Minute
)

// Pause says since when a source is paused, and who asked.
type Pause struct {
	Since time.Time `json:"since"`
	By    string    `json:"by,omitempty"`
}

// ErrNoSource is the error of a request naming a source the configuration
// does not have.
var ErrNoSource = errors.New("no such source")

func (c *Crawler) source(name string) (*source, error) {
	src := c.sources[name]
	if src == nil {
		return nil, fmt.Errorf("%w: %q", ErrNoSource, name)
	}
	return src, nil
}

// PauseSource pauses a source: its URLs are fetched no more (those in
// flight finish), its discovery and aged checks wait, and cycles end
// without them, until ResumeSource. by names who asked.
func (c *Crawler) PauseSource(name, by string) (Pause, error) {
	if _, err := c.source(name); err != nil {
		return Pause{}, err
	}
	if p, ok := c.Paused()[name]; ok {
		return p, nil
	}
	p := Pause{Since: c.now().UTC(), By: by}
	raw, _ := json.Marshal(p)
	if err := c.front.PutMeta(metaPaused+name, raw); err != nil {
		return Pause{}, err
	}
	_, err := c.applyPaused()
	return p, err
}

// ResumeSource ends a source's pause: its queued URLs are due at once, in
// the cycle running if there is one; its discovery waits for the next
// cycle, if it fell due meanwhile. It says whether the source was paused.
func (c *Crawler) ResumeSource(name string) (bool, error) {
	if _, err := c.source(name); err != nil {
		return false, err
	}
	_, was := c.Paused()[name]
	if err := c.front.PutMeta(metaPaused+name, nil); err != nil {
		return false, err
	}
	_, err := c.applyPaused()
	return was, err
}

// Paused are the paused sources as last read from the state store.
func (c *Crawler) Paused() map[string]Pause {
	c.pausedMu.Lock()
	defer c.pausedMu.Unlock()
	out := make(map[string]Pause, len(c.paused))
	for k, v := range c.paused {
		out[k] = v
	}
	return out
}

// applyPaused reads the paused sources from the state store (another
// process sharing it may have paused or resumed one) and has the store
// hold their URLs back.
func (c *Crawler) applyPaused() (map[string]Pause, error) {
	paused := map[string]Pause{}
	var names []string
	for _, src := range c.order {
		raw, err := c.front.GetMeta(metaPaused + src.cfg.Name)
		if err != nil {
			return nil, err
		}
		if raw == nil {
			continue
		}
		var p Pause
		_ = json.Unmarshal(raw, &p) // a damaged value still pauses
		paused[src.cfg.Name] = p
		names = append(names, src.cfg.Name)
	}
	if err := c.front.Pause(names); err != nil {
		return nil, err
	}
	c.pausedMu.Lock()
	c.paused = paused
	c.pausedMu.Unlock()
	return paused, nil
}

// active are the sources of list that are not paused.
func (c *Crawler) active(list []*source) []*source {
	paused := c.Paused()
	if len(paused) == 0 {
		return list
	}
	out := make([]*source, 0, len(list))
	for _, src := range list {
		if _, ok := paused[src.cfg.Name]; !ok {
			out = append(out, src)
		}
	}
	return out
}

// DiscoverNow makes the discovery of each named source (every source when
// none is named) due at once: the next cycle visits their start URLs,
// sitemaps and feeds whatever their discovery_interval says.
func (c *Crawler) DiscoverNow(names ...string) error {
	if len(names) == 0 {
		for _, src := range c.order {
			names = append(names, src.cfg.Name)
		}
	}
	for _, n := range names {
		if _, err := c.source(n); err != nil {
			return err
		}
	}
	for _, n := range names {
		if err := c.front.PutMeta(metaDiscovered+n, nil); err != nil {
			return err
		}
	}
	return nil
}

// URLDecision is what a request did with one URL.
type URLDecision struct {
	// URL is the URL as the request gave it.
	URL string `json:"url"`
	// Decision is queued, deleted or refused.
	Decision string `json:"decision"`
	// Source is the source whose crawl space holds it, or the one that
	// refused it.
	Source string `json:"source,omitempty"`
	// Fetch is the URL requested: as found, less what the query filter
	// drops.
	Fetch string `json:"fetch,omitempty"`
	// Reason and Rule say why a URL was refused, as explain does.
	Reason string `json:"reason,omitempty"`
	Rule   string `json:"rule,omitempty"`
	// Document says whether a delete found a document to delete.
	Document *bool `json:"document,omitempty"`
	// Detail says more: a paused source, a delete not landed yet.
	Detail string `json:"detail,omitempty"`
}

// The decisions of a request.
const (
	DecisionQueued  = "queued"
	DecisionDeleted = "deleted"
	DecisionRefused = "refused"
)

// judged is a URL of a request as the crawl space decides it.
type judged struct {
	d   URLDecision
	to  *rules.Source
	url string // its key, as stored
	// found is the URL as the caller wrote it, resolved and normalised:
	// what the crawl space and robots.txt judge.
	found string
	rec   *frontier.Record
	dec   rules.Decision
}

// judge decides each URL as a link found would be (Set.Route), at its
// stored depth when the store knows it, else at 0 as a start URL.
func (c *Crawler) judge(raws []string) ([]judged, error) {
	out := make([]judged, len(raws))
	for i, raw := range raws {
		j := &out[i]
		j.d.URL = raw
		found, err := urlnorm.Found(raw)
		if err != nil {
			j.d.Decision, j.d.Reason, j.d.Detail = DecisionRefused, string(rules.ReasonInvalid), err.Error()
			continue
		}
		to, u, d := c.rules.Route(found, 0, nil)
		rec, known, err := c.front.Get(u)
		if err != nil {
			return nil, err
		}
		if known {
			j.rec = &rec
			if rec.Depth != 0 {
				to, u, d = c.rules.Route(found, rec.Depth, nil)
			}
		}
		if to != nil {
			j.d.Source, j.to = to.Name, to
		}
		j.url, j.found, j.dec = u, found, d
		if !d.Crawl {
			j.d.Decision, j.d.Reason, j.d.Rule = DecisionRefused, string(d.Reason), d.Rule
			continue
		}
		if len(u) > urlnorm.MaxLength {
			j.d.Decision, j.d.Reason = DecisionRefused, "url_too_long"
			j.d.Detail = fmt.Sprintf("%d bytes, more than the state store holds (%d)", len(u), urlnorm.MaxLength)
			continue
		}
		j.d.Fetch = to.Fetch(found)
	}
	return out, nil
}

// Recrawl queues each URL the crawl space holds to be fetched at once, with
// the start URLs' priority, and written whatever it holds: a URL the store
// does not know is queued as a link found would be (the source's budgets
// apply), a known one whatever its state, a removed one included. The
// running cycle fetches it; between cycles, the next one. A URL outside
// the crawl space is refused with the reason and rule that refuse it.
func (c *Crawler) Recrawl(raws []string) ([]URLDecision, error) {
	js, err := c.judge(raws)
	if err != nil {
		return nil, err
	}
	var fresh []frontier.Item
	for i := range js {
		if j := &js[i]; j.d.Decision == "" && j.rec == nil {
			fresh = append(fresh, foundItem(j.to, j.url, j.found, 0, j.dec))
		}
	}
	if len(fresh) > 0 {
		if _, err := c.front.Add(fresh...); err != nil {
			return nil, err
		}
	}
	var urls []string
	var idx []int
	for i := range js {
		if js[i].d.Decision == "" {
			urls = append(urls, js[i].url)
			idx = append(idx, i)
		}
	}
	errs, err := c.front.Recrawl(urls, frontier.Start)
	if err != nil {
		return nil, err
	}
	paused := c.Paused()
	out := make([]URLDecision, len(js))
	for k, i := range idx {
		j := &js[i]
		switch {
		case errors.Is(errs[k], frontier.ErrNotFound):
			// Add kept it out: a URL budget of its source is full.
			j.d.Decision, j.d.Reason = DecisionRefused, "over_budget"
			j.d.Detail = "a URL budget of source " + j.d.Source + " is full (the cycle's report names it)"
		case errors.Is(errs[k], frontier.ErrLeased):
			j.d.Decision, j.d.Detail = DecisionQueued, "being fetched now"
		case errs[k] != nil:
			return nil, errs[k]
		default:
			j.d.Decision = DecisionQueued
		}
		if p, ok := paused[j.d.Source]; ok && j.d.Decision == DecisionQueued {
			j.d.Detail = fmt.Sprintf("source %s is paused since %s: fetched once it resumes", j.d.Source, p.Since.Format(time.RFC3339))
		}
	}
	for i := range js {
		out[i] = js[i].d
	}
	return out, nil
}

// Remove takes each URL the crawl space holds out of the crawl at once:
// its document, if it has one, is deleted through the writer as every
// delete is (recorded pending first, sent, its acknowledgement recorded),
// and the URL is excluded with ReasonRemoved, so a link or a sitemap that
// still lists it does not bring it back; a request to crawl it does. A URL
// a worker is fetching is waited for, within ctx and a minute. A URL
// outside the crawl space is refused, as Recrawl refuses it.
func (c *Crawler) Remove(ctx context.Context, raws []string) ([]URLDecision, error) {
	js, err := c.judge(raws)
	if err != nil {
		return nil, err
	}
	left := map[string]int{} // URL as crawled -> its index in js
	for i := range js {
		if js[i].d.Decision == "" {
			left[js[i].url] = i
		}
	}
	var unknown []frontier.Item
	wait, cancel := context.WithTimeout(ctx, removeWait)
	defer cancel()
	var deletes []*write
	for len(left) > 0 {
		urls := make([]string, 0, len(left))
		for u := range left {
			urls = append(urls, u)
		}
		recs, errs, err := c.front.Remove(urls, ReasonRemoved)
		if err != nil {
			return nil, err
		}
		for k, u := range urls {
			j := &js[left[u]]
			switch {
			case errors.Is(errs[k], frontier.ErrLeased):
				continue // asked again below
			case errors.Is(errs[k], frontier.ErrNotFound):
				unknown = append(unknown, foundItem(j.to, u, "", 0, j.dec))
				j.d.Decision, j.d.Document = DecisionDeleted, new(false)
			case errs[k] != nil:
				return nil, errs[k]
			default:
				hasDoc := recs[k].Pending == pendingDelete
				j.d.Decision, j.d.Document = DecisionDeleted, &hasDoc
				if hasDoc {
					deletes = append(deletes, deletion(recs[k]))
				}
			}
			delete(left, u)
		}
		if len(left) == 0 {
			break
		}
		select {
		case <-wait.Done():
			for _, i := range left {
				js[i].d.Decision, js[i].d.Reason = DecisionRefused, "in_flight"
				js[i].d.Detail = "a worker is fetching it still: ask again"
			}
			clear(left)
		case <-time.After(100 * time.Millisecond):
		}
	}
	if len(unknown) > 0 {
		// Recorded removed, so that a link found later does not queue it.
		if _, err := c.front.Exclude(ReasonRemoved, unknown...); err != nil {
			return nil, err
		}
	}
	if err := c.sendDeletes(ctx, deletes); err != nil {
		for i := range js {
			if d := js[i].d.Document; d != nil && *d {
				js[i].d.Detail = "the delete is recorded and is sent again until it lands: " + err.Error()
			}
		}
	}
	out := make([]URLDecision, len(js))
	for i := range js {
		out[i] = js[i].d
	}
	return out, nil
}

// sendDeletes hands the deletes to the sink and waits, within ctx, for
// them to land.
func (c *Crawler) sendDeletes(ctx context.Context, ws []*write) error {
	if len(ws) == 0 {
		return nil
	}
	for _, w := range ws {
		if err := c.writes.sendCtx(ctx, w); err != nil {
			return err
		}
	}
	return c.writes.settle(ctx)
}
