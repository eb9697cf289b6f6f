package esfrontier

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Groups of duplicates (frontier.Duplicates), shared by every process.
//
// A URL's membership is in its own document: the content key of its group
// (dup) and its claim, written by its outcome in the same update, so it is
// exactly as current as the outcome. The groups index (Prefix-groups) is
// only the way from a content key to its members' URLs: one document per
// (source, content key), its members an object keyed by the URL's hash,
// merged by partial updates (retry_on_conflict: two processes adding to one
// group both land; no script, which a cluster may lack). Both are read by
// GET and _mget, which see every write at once, where a search would wait
// for the next refresh, and settling a group right after an outcome needs
// that outcome.
//
// A URL is added to its new group before its outcome is written and taken
// out of its old one after: a group lists every member and, for a while
// (or for good, after a crash between the two writes), URLs that are not
// or no longer members. SameContent reads the listed URLs' documents and
// keeps those whose dup is the group's (and not in Error or Excluded), so
// such leftovers are never members; removals only keep a group small.

var _ frontier.Duplicates = (*Store)(nil)

// counter counts the requests and bytes of one part of the store's work,
// those whose context carries it (counterKey).
type counter struct{ requests, sent, received atomic.Int64 }

type counterKey struct{}

// DuplicatesCost is the part of Cost the groups of duplicates took: their
// own requests, and the bytes of the additions that travel in the
// requests storing what the pages found.
func (s *Store) DuplicatesCost() Cost {
	c := &s.dupCost
	return Cost{Requests: c.requests.Load(), BytesSent: c.sent.Load(), BytesReceived: c.received.Load()}
}

// dupCtx counts what a request of the groups costs.
func (s *Store) dupCtx(ctx context.Context) context.Context {
	return context.WithValue(ctx, counterKey{}, &s.dupCost)
}

// groupsIndex is the index of the groups, beside the URL index.
func (s *Store) groupsIndex() string { return strings.TrimSuffix(s.urls, "-urls") + "-groups" }

// groupsIndexBody is its settings and mappings: nothing is searched in it.
func groupsIndexBody(replicas *int) map[string]any {
	settings := map[string]any{"number_of_shards": 1}
	if replicas != nil {
		settings["number_of_replicas"] = *replicas
	}
	return map[string]any{"settings": settings, "mappings": map[string]any{"dynamic": false,
		"properties": map[string]any{"m": map[string]any{"type": "object", "enabled": false}}}}
}

// groupID names the group (source, content).
func groupID(source, content string) string {
	sum := sha256.Sum256([]byte(source + "\x00" + content))
	return hex.EncodeToString(sum[:])
}

// memberKey is a URL's key among its group's members: field names may
// not hold dots, and URLs do.
func memberKey(url string) string { return fmt.Sprintf("%016x", frontier.LinkKey(url)) }

// membership is what an outcome makes of its URL's group: see
// frontier.Duplicates. ok is false for an outcome that leaves it as it was
// (Waiting).
func membership(o *frontier.Outcome) (content string, claim int, ok bool) {
	if o.State == frontier.Waiting {
		return "", 0, false
	}
	if o.State == frontier.Fetched && o.Content != "" {
		return o.Content, max(o.Claim, 0), true
	}
	return "", 0, true
}

// groupLine adds url to (when add) or takes it out of the group of
// (source, content).
func (s *Store) groupLine(b *ndjson, source, content, url string, add bool) {
	var member any // null: Elasticsearch's merge keeps the key, with no URL
	if add {
		member = url
	}
	action := map[string]any{"_index": s.groupsIndex(), "_id": groupID(source, content), "retry_on_conflict": 5}
	body := map[string]any{"doc": map[string]any{"m": map[string]any{memberKey(url): member}}}
	if add {
		body["doc_as_upsert"] = true
	}
	b.line(map[string]any{"update": action})
	b.line(body)
}

// groupJoins are the _bulk lines adding to their new groups the URLs of
// batch whose outcome moves them into one, one action and its body each:
// sent before the outcomes, at the end of the request storing what the
// pages found.
func (s *Store) groupJoins(batch []*completion) [][]byte {
	var out [][]byte
	for _, c := range batch {
		content, _, ok := membership(&c.o)
		if ok && content != "" && content != c.l.dup {
			var b ndjson
			s.groupLine(&b, c.rec.Source, content, c.rec.URL, true)
			out = append(out, b.Bytes())
			s.dupCost.sent.Add(int64(b.Len()))
		}
	}
	return out
}

// joinedGroups checks the answers to joins and sends again those refused
// (a full queue, say) until they are taken or the retries run out.
func (s *Store) joinedGroups(ctx context.Context, joins [][]byte, items []bulkItem) error {
	ctx = s.dupCtx(ctx)
	if len(items) != len(joins) {
		return fmt.Errorf("esfrontier: %d answers to %d additions to groups of duplicates", len(items), len(joins))
	}
	return s.retry(ctx, func() error {
		var again [][]byte
		var b ndjson
		for i := range items {
			if items[i].Status/100 != 2 {
				again = append(again, joins[i])
				b.Write(joins[i])
			}
		}
		if len(again) == 0 {
			return nil
		}
		answers, err := s.bulk(ctx, b.Bytes(), "")
		if err != nil {
			return err
		}
		if len(answers) != len(again) {
			return fmt.Errorf("esfrontier: short _bulk answer")
		}
		joins, items = again, answers
		for i := range items {
			if err := itemError(&items[i]); err != nil {
				return fmt.Errorf("add to a group of duplicates: %w", err)
			}
		}
		return nil
	})
}

// leaveGroups takes out of their old groups the URLs whose stored outcome
// moved them out, and writes the membership of the outcomes that were
// written again after a conflict (changeNoting writes the record's fields
// only). stored says which of batch were stored; again which of those were
// written again. A failure leaves leftovers that SameContent skips: it is
// logged, not the outcome's.
func (s *Store) leaveGroups(ctx context.Context, batch []*completion, stored, again []bool) {
	ctx = s.dupCtx(ctx)
	var b ndjson
	for k, c := range batch {
		content, claim, ok := membership(&c.o)
		if !ok || !stored[k] {
			continue
		}
		if c.l.dup != "" && c.l.dup != content {
			s.groupLine(&b, c.rec.Source, c.l.dup, c.rec.URL, false)
		}
		if again[k] && (content != "" || c.l.dup != "") {
			b.line(map[string]any{"update": map[string]any{"_index": s.urls, "_id": docID(c.rec.URL), "routing": urlnorm.Origin(c.rec.URL)}})
			b.line(map[string]any{"doc": map[string]any{"dup": content, "claim": claim}})
		}
	}
	if b.Len() == 0 {
		return
	}
	err := s.retry(ctx, func() error {
		items, err := s.bulk(ctx, b.Bytes(), "")
		if err != nil {
			return err
		}
		for i := range items {
			if items[i].Status != 404 { // a group or URL gone meanwhile
				if err := itemError(&items[i]); err != nil {
					return err
				}
			}
		}
		return nil
	})
	if err != nil {
		s.log.Warn("cannot update groups of duplicates", "node", s.node, "err", err)
	}
}

// SameContent lists the members of the group (source, content), in URL
// byte order: see frontier.Duplicates. One GET of the group and one _mget
// of its listed URLs.
func (s *Store) SameContent(source, content string) ([]frontier.Member, error) {
	ctx := s.dupCtx(context.Background())
	var g struct {
		Found  bool `json:"found"`
		Source struct {
			M map[string]*string `json:"m"`
		} `json:"_source"`
	}
	err := s.do(ctx, http.MethodGet, "/"+s.groupsIndex()+"/_doc/"+groupID(source, content)+"?_source_includes=m", nil, &g)
	if isStatus(err, 404) {
		return nil, nil // no such group, or no group yet in this crawl
	}
	if err != nil {
		return nil, &Error{Op: "read a group of duplicates", Err: err}
	}
	listed := make([]string, 0, len(g.Source.M))
	for _, u := range g.Source.M {
		if u != nil {
			listed = append(listed, *u)
		}
	}
	if len(listed) == 0 {
		return nil, nil
	}
	slices.Sort(listed)
	listed = listed[:min(len(listed), maxGroupRead)]
	docs := make([]map[string]any, len(listed))
	for i, u := range listed {
		docs[i] = map[string]any{"_id": docID(u), "routing": urlnorm.Origin(u), "_source": []string{"state", "dup", "claim"}}
	}
	var ans struct {
		Docs []struct {
			Found  bool `json:"found"`
			Source struct {
				State uint8  `json:"state"`
				Dup   string `json:"dup"`
				Claim int    `json:"claim"`
			} `json:"_source"`
		} `json:"docs"`
	}
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_mget", map[string]any{"docs": docs}, &ans); err != nil {
		return nil, &Error{Op: "read the members of a group of duplicates", Err: err}
	}
	var out []frontier.Member
	for i, d := range ans.Docs {
		if i >= len(listed) || !d.Found || d.Source.Dup != content {
			continue // listed, but not (or no longer) a member
		}
		if st := frontier.State(d.Source.State); st == frontier.Error || st == frontier.Excluded {
			continue // left the crawl without an outcome that regrouped it
		}
		out = append(out, frontier.Member{URL: listed[i], Claim: d.Source.Claim})
	}
	return out, nil
}

// maxGroupRead bounds the URLs one SameContent reads, as the embedded
// store's.
const maxGroupRead = 1000

// ContentOf is url's group and claim: see frontier.Duplicates. A URL this
// process has leased answers from its lease, read with it; another is
// read by GET.
func (s *Store) ContentOf(url string) (string, int, error) {
	q := s.sched
	q.mu.Lock()
	l := q.leases[url]
	q.mu.Unlock()
	if l != nil {
		return l.dup, l.claim, nil
	}
	var a struct {
		Source struct {
			Dup   string `json:"dup"`
			Claim int    `json:"claim"`
		} `json:"_source"`
	}
	path := "/" + s.urls + "/_doc/" + esc(docID(url)) + "?routing=" + esc(urlnorm.Origin(url)) + "&_source_includes=dup,claim"
	err := s.do(s.dupCtx(context.Background()), http.MethodGet, path, nil, &a)
	if isStatus(err, 404) {
		return "", 0, nil
	}
	if err != nil {
		return "", 0, &Error{Op: "read the group of " + url, Err: err}
	}
	return a.Source.Dup, a.Source.Claim, nil
}

// Reclaim makes the changes of rs: see frontier.Duplicates. The claim is
// in the URL's document beside its record, so each change is one partial
// update, made only if the document is still as read. A URL this process
// has leased is refused; one another process has leased is not known
// here, and its outcome, stored after, settles its group again.
func (s *Store) Reclaim(rs []frontier.Reclaim) ([]error, error) {
	byURL := make(map[string]*frontier.Reclaim, len(rs))
	at := make(map[string]int, len(rs)) // where a URL is in urls
	urls := make([]string, 0, len(rs))
	for i := range rs {
		if _, ok := at[rs[i].URL]; !ok {
			at[rs[i].URL] = len(urls)
			urls = append(urls, rs[i].URL)
		}
		byURL[rs[i].URL] = &rs[i]
	}
	_, changed, errs, err := s.changeStored(urls, func(d *doc, r *frontier.Record, note func(...frontier.Event)) (map[string]any, bool, error) {
		rc := byURL[r.URL]
		switch {
		case s.leased(r.URL):
			return nil, false, frontier.ErrLeased
		case d.Dup != rc.Content || d.Claim != max(rc.From, 0) || r.State == frontier.Error || r.State == frontier.Excluded:
			return nil, false, frontier.ErrStale
		case r.Pending != "" || rc.Pending == frontier.PendingIndex && !r.Indexed:
			return nil, false, frontier.ErrUnsettled
		}
		r.Hash, r.Pending, r.DocID = rc.Hash, rc.Pending, rc.DocID
		note(rc.Event())
		return map[string]any{"claim": max(rc.To, 0)}, true, nil
	})
	if err != nil {
		return nil, err
	}
	// As an outcome's write: its partition is given back once it is
	// acknowledged.
	q := s.sched
	q.mu.Lock()
	for i, u := range urls {
		if changed[i] {
			q.unacked[u] = s.partition(urlnorm.Origin(u))
		}
	}
	q.mu.Unlock()
	out := make([]error, len(rs))
	for i := range rs {
		out[i] = errs[at[rs[i].URL]]
	}
	return out, nil
}
