package provider

import (
	"cmp"
	"context"
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
// settled: the primary is fetched again, its hash forgotten, when its
// claim does not match the group as it now stands (a member joined or
// left, or the primary changed), and so is any other member still
// claiming a document, so that its own is deleted. A URL that leaves a
// group (its content changed, it went, it became noindex) settles the
// group it left, so when the primary goes another member still serving
// the content is fetched and writes the document under its own URL.

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
		doc.Duplicates = slices.Clone(urls[1:min(len(urls), maxDuplicatesListed+1)])
		doc.ContentHash = mapping.ContentHash(doc)
		o.Hash = doc.ContentHash
	}
	return j.item.URL, nil
}

// settleGroup fetches again the members of a group whose claims do not
// match it: see the comment at the top of this file. It runs once the
// outcome that changed the group is stored.
func (c *Crawler) settleGroup(g frontier.Duplicates, source, content string) {
	members, err := g.SameContent(source, content)
	if err != nil {
		c.log.Error("cannot read a group of duplicates", "source", source, "content", content, "err", err)
		return
	}
	c.settleMembers(source, members)
}

// settleMembers is settleGroup on the members of the group as read.
func (c *Crawler) settleMembers(source string, members []frontier.Member) {
	if len(members) == 0 {
		return
	}
	primary := members[0].URL
	for _, m := range members[1:] {
		if primaryFirst(m.URL, primary) < 0 {
			primary = m.URL
		}
	}
	urls := make([]string, len(members))
	for i, m := range members {
		urls[i] = m.URL
	}
	slices.SortFunc(urls, primaryFirst)
	want := claimOf(urls)
	var again []string
	for _, m := range members {
		if m.URL == primary && m.Claim != want || m.URL != primary && m.Claim > 0 {
			again = append(again, m.URL)
		}
	}
	if len(again) == 0 {
		return
	}
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("group of duplicates changed: fetching again", "source", source, "primary", primary, "urls", again)
	}
	if err := c.front.Refetch(again); err != nil {
		c.log.Error("cannot queue a group of duplicates again", "source", source, "urls", again, "err", err)
	}
}
