package provider

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"slices"
	"sync"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/mapping"
)

// Duplicate pages. The URLs of a source whose pages have the same content
// hash, and no canonical link elsewhere, form a group (frontier.Duplicates
// keeps the groups); one document stands for each group, under its
// primary URL, and lists the other members in doc_duplicates. The primary
// is the member with the shortest URL, ties broken by byte order: it does
// not depend on which member was fetched first, so every crawl of the same
// site picks the same one.
//
// Each page that would be indexed joins its group when its outcome is
// stored, claiming the group's document (with the members it listed) or
// leaving it to the primary. Once the outcome is stored, the group is
// settled: each member whose claim does not match the group as it now
// stands (a member joined or left, or the primary changed) is put right.
// A primary that holds no document (the one before it left the group) is
// fetched again, its hash forgotten, to write the group's under its own
// URL. Every other mismatch is put right from what the store holds, with
// no fetch: the primary's document is updated in place with the group's
// list and the hash that list gives (mapping.GroupHash), and a member that
// is no longer the primary has its document deleted (frontier.Reclaim).
// Those rewrites wait for the end of the cycle (rewriteGroups), so a group
// that grows all through a cycle (a page linking a fresh ?id= copy of
// itself) costs one fetch of each of its URLs and one rewrite of its
// document, not a fetch of its primary per member. A URL that leaves a
// group (its content changed, it went, it became noindex) settles the
// group it left, so when the primary goes another member still serving the
// content is fetched and writes the document under its own URL.

// maxDuplicatesListed bounds doc_duplicates: a site serving one page under
// thousands of URLs (a session id in the path) lists the first ones.
const maxDuplicatesListed = 1000

// groupLocks serialise the decisions of one group's members within this
// process. A page holds its group's lock until its outcome is stored, which
// on a large store is tens of milliseconds, so the locks are per group:
// striped locks made pages of unrelated content wait for each other's
// commits (on the million-page benchmark, three quarters of the workers'
// time). A group's entry lives while a member holds or waits for it.
type groupLocks struct {
	mu   sync.Mutex
	held map[groupName]*groupLock
}

type groupName struct{ source, content string }

type groupLock struct {
	sync.Mutex
	users int // holders and waiters, under groupLocks.mu
}

// lockGroup locks the group (source, content) until the returned func is
// called, once the page's outcome is stored.
func (c *Crawler) lockGroup(source, content string) func() {
	return c.groupLocks.lock(groupName{source, content})
}

func (g *groupLocks) lock(name groupName) func() {
	g.mu.Lock()
	if g.held == nil {
		g.held = make(map[groupName]*groupLock)
	}
	l := g.held[name]
	if l == nil {
		l = &groupLock{}
		g.held[name] = l
	}
	l.users++
	g.mu.Unlock()
	l.Lock()
	return func() {
		l.Unlock()
		g.mu.Lock()
		if l.users--; l.users == 0 {
			delete(g.held, name)
		}
		g.mu.Unlock()
	}
}

// groups is the store's groups when the source merges duplicates, nil
// when it keeps each URL's document (keep_duplicates) or the store has no
// groups.
func (c *Crawler) groups(src *source) frontier.Duplicates {
	if src == nil || src.cfg.KeepDuplicates {
		return nil
	}
	g, _ := c.front.(frontier.Duplicates)
	return g
}

// claimOf is the claim of a primary that listed urls (itself first, in
// primaryFirst order): a fingerprint of the member set, positive. A count
// would not do: one copy joining while another leaves keeps the count, and
// the document would go on listing the one that left.
func claimOf(urls []string) int {
	h := fnv.New64a()
	for _, u := range urls {
		h.Write([]byte(u))
		h.Write([]byte{'\n'})
	}
	return int(h.Sum64()>>2) | 1
}

// primaryFirst orders the members of a group, primary first.
func primaryFirst(a, b string) int {
	if c := cmp.Compare(len(a), len(b)); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// joinGroup decides what a page that would be indexed does in its group:
// as its primary, doc lists the other members and the outcome claims the
// document; otherwise the outcome leaves the document to the primary,
// whose URL is returned. content is the page's content hash.
func (j *job) joinGroup(g frontier.Duplicates, doc *docfields.Document, o *frontier.Outcome) (primary string, err error) {
	content := doc.ContentHash
	members, err := g.SameContent(j.src.cfg.Name, content)
	if err != nil {
		return "", err
	}
	urls := make([]string, 0, len(members)+1)
	urls = append(urls, j.item.URL)
	for _, m := range members {
		if m.URL != j.item.URL {
			urls = append(urls, m.URL)
		}
	}
	slices.SortFunc(urls, primaryFirst)
	o.Content = content
	if urls[0] != j.item.URL {
		o.Claim = 0
		return urls[0], nil
	}
	o.Claim = claimOf(urls)
	if len(urls) > 1 {
		doc.Duplicates = listed(urls)
		doc.ContentHash = mapping.GroupHash(content, doc.Duplicates)
		o.Hash = doc.ContentHash
	}
	return j.item.URL, nil
}

// listed is the doc_duplicates of a group whose members are urls, primary
// first.
func listed(urls []string) []string {
	return slices.Clone(urls[1:min(len(urls), maxDuplicatesListed+1)])
}

// settleGroup puts right the claims of a group that do not match it: see
// the comment at the top of this file. It runs once the outcome that
// changed the group is stored.
func (c *Crawler) settleGroup(g frontier.Duplicates, source, content string) {
	members, err := g.SameContent(source, content)
	if err != nil {
		c.log.Error("cannot read a group of duplicates", "source", source, "content", content, "err", err)
		return
	}
	c.settleMembers(source, content, members)
}

// settleMembers is settleGroup on the members of the group as read: a
// primary holding no document is fetched at once, and the group waits for
// the rewrite of the other mismatches.
func (c *Crawler) settleMembers(source, content string, members []frontier.Member) {
	v := viewOf(members)
	if len(v.stale) > 0 {
		c.unsettled.add(groupName{source, content})
	}
	if v.fetch == "" {
		return
	}
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("group of duplicates lost its primary: fetching the next", "source", source, "primary", v.fetch)
	}
	if err := c.front.Refetch([]string{v.fetch}); err != nil {
		c.log.Error("cannot queue a group of duplicates again", "source", source, "url", v.fetch, "err", err)
	}
}

// groupView is a group as read, against its members' claims.
type groupView struct {
	urls []string // the members, primary first
	want int      // the primary's claim
	// fetch is the primary when it holds no document (claim 0): it is
	// fetched again to write the group's. stale are the members whose
	// claims the store can put right: the primary listing other members,
	// another member holding a document.
	fetch string
	stale []frontier.Member
}

func viewOf(members []frontier.Member) groupView {
	var v groupView
	if len(members) == 0 {
		return v
	}
	v.urls = make([]string, len(members))
	for i, m := range members {
		v.urls[i] = m.URL
	}
	slices.SortFunc(v.urls, primaryFirst)
	v.want = claimOf(v.urls)
	primary := v.urls[0]
	for _, m := range members {
		switch {
		case m.URL == primary && m.Claim == 0:
			v.fetch = m.URL
		case m.URL == primary && m.Claim != v.want, m.URL != primary && m.Claim > 0:
			v.stale = append(v.stale, m)
		}
	}
	return v
}

// maxUnsettled is how many groups wait for their rewrite before it is
// done in the middle of a cycle: a bound on what a cycle in which many
// groups change (a first crawl of a site full of copies) holds in memory.
const maxUnsettled = 4096

// unsettledGroups are the groups whose claims do not match them, waiting
// for rewriteGroups.
type unsettledGroups struct {
	mu    sync.Mutex
	set   map[groupName]struct{}
	limit int           // add signals full once set holds this many
	full  chan struct{} // read by the crawl's housekeeping goroutine
}

func newUnsettledGroups() *unsettledGroups {
	return &unsettledGroups{set: map[groupName]struct{}{}, limit: maxUnsettled, full: make(chan struct{}, 1)}
}

func (u *unsettledGroups) add(name groupName) {
	u.mu.Lock()
	u.set[name] = struct{}{}
	full := len(u.set) >= u.limit
	u.mu.Unlock()
	if full {
		select {
		case u.full <- struct{}{}:
		default:
		}
	}
}

// take empties the set and returns what it held.
func (u *unsettledGroups) take() []groupName {
	u.mu.Lock()
	defer u.mu.Unlock()
	names := make([]groupName, 0, len(u.set))
	for n := range u.set {
		names = append(names, n)
	}
	clear(u.set)
	u.limit = maxUnsettled
	return names
}

// keep puts back groups a rewrite could not settle yet; the next rewrite
// in the middle of a cycle waits for maxUnsettled more, so that groups
// waiting on a slow sink are not read again for every new one.
func (u *unsettledGroups) keep(names []groupName) {
	if len(names) == 0 {
		return
	}
	u.mu.Lock()
	for _, n := range names {
		u.set[n] = struct{}{}
	}
	u.limit = len(u.set) + maxUnsettled
	u.mu.Unlock()
}

// rewriteBatch is how many groups one change of the store rewrites.
const rewriteBatch = 256

// rewriteGroups puts right from the store the groups waiting for it: each
// primary listing other members than its group's has its document's list
// and hash updated in place, and each other member holding a document has
// it deleted (frontier.Reclaim), with no fetch. A primary whose own write
// has not landed yet cannot be updated: at the end of the cycle (final)
// the rewrite waits for the cycle's writes to land and tries those once
// more; groups still unsettled wait for the next rewrite.
func (c *Crawler) rewriteGroups(ctx context.Context, final bool) {
	g, ok := c.front.(frontier.Duplicates)
	if !ok {
		return
	}
	kept := c.rewrite(g, c.unsettled.take())
	if final && len(kept) > 0 {
		flushCtx, cancel := context.WithTimeout(ctx, c.timing.flushWait)
		err := c.writes.settle(flushCtx)
		cancel()
		if err == nil {
			kept = c.rewrite(g, kept)
		}
	}
	c.unsettled.keep(kept)
}

// rewrite is rewriteGroups on names; it returns the groups kept for later.
func (c *Crawler) rewrite(g frontier.Duplicates, names []groupName) (kept []groupName) {
	for chunk := range slices.Chunk(names, rewriteBatch) {
		var (
			rs      []frontier.Reclaim
			ws      []*write
			of      []groupName
			refetch []string
		)
		for _, name := range chunk {
			if c.groups(c.sources[name.source]) == nil {
				continue // the source left, or keeps its duplicates now
			}
			members, err := g.SameContent(name.source, name.content)
			if err != nil {
				c.log.Error("cannot read a group of duplicates", "source", name.source, "content", name.content, "err", err)
				continue
			}
			v := viewOf(members)
			if v.fetch != "" {
				refetch = append(refetch, v.fetch)
			}
			for _, m := range v.stale {
				r, w := reclaim(name, v, m)
				if w.del && c.guarded(w.source) {
					// A member folded into its group loses its document:
					// a delete like any other, held until the cycle's end.
					r.Pending, w.hold = frontier.PendingHold, true
				}
				rs, ws, of = append(rs, r), append(ws, w), append(of, name)
			}
		}
		if len(rs) > 0 {
			kept = append(kept, c.reclaim(g, rs, ws, of)...)
		}
		if err := c.front.Refetch(refetch); err != nil {
			c.log.Error("cannot queue groups of duplicates again", "urls", refetch, "err", err)
		}
	}
	return kept
}

// reclaim is the change that puts right m's claim in the group name (as
// read in v), and the write it records.
func reclaim(name groupName, v groupView, m frontier.Member) (frontier.Reclaim, *write) {
	id := docfields.ID(m.URL)
	if m.URL != v.urls[0] {
		return frontier.Reclaim{URL: m.URL, Content: name.content, From: m.Claim, To: 0, Hash: name.content,
				Pending: pendingDelete, DocID: id, Detail: "duplicate: " + v.urls[0]},
			&write{del: true, id: id, url: m.URL, source: name.source}
	}
	dups := listed(v.urls)
	hash := mapping.GroupHash(name.content, dups)
	return frontier.Reclaim{URL: m.URL, Content: name.content, From: m.Claim, To: v.want, Hash: hash,
			Pending: pendingIndex, DocID: id, Detail: fmt.Sprintf("duplicates listed: %d", len(dups))},
		&write{id: id, url: m.URL, source: name.source, fields: docfields.AppendGroupJSON(nil, dups, hash)}
}

// reclaim records rs in the store and sends the writes of those made;
// it returns the groups of those refused because a write of theirs is
// still on its way.
func (c *Crawler) reclaim(g frontier.Duplicates, rs []frontier.Reclaim, ws []*write, of []groupName) (kept []groupName) {
	errs, err := g.Reclaim(rs)
	if err != nil {
		c.log.Error("cannot rewrite groups of duplicates", "groups", len(slices.Compact(of)), "err", err)
		return nil
	}
	for i, err := range errs {
		switch {
		case err == nil:
			if c.log.Enabled(context.Background(), slog.LevelDebug) {
				c.log.Debug("group of duplicates rewritten from the store", "url", rs[i].URL, "source", ws[i].source,
					"write", rs[i].Pending, "detail", rs[i].Detail)
			}
			if !ws[i].hold {
				c.writes.send(ws[i])
			}
		case errors.Is(err, frontier.ErrUnsettled):
			if len(kept) == 0 || kept[len(kept)-1] != of[i] {
				kept = append(kept, of[i])
			}
		}
	}
	return kept
}
