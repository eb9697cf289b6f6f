package esfrontier

import (
	"context"
	"net/http"
	"slices"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// CountBySource counts the URLs of every source by state and, in Error
// and Excluded, by reason, as frontier.SourceCounts.Add would over every
// record, and, for each source of agedBefore, those frontier.AgedCheckDue
// selects with its cut: one search with a terms aggregation, where a walk
// of the URL index reads every record a page at a time. URLs this process
// has leased count as InFlight, as Scan shows them.
//
// "Sitemap lastmod newer than the fetch" compares two fields of a record,
// which no query does without a script (and the test node has no
// scripting): the Fetched URLs of those sources with a lastmod are read
// in pages, a few fields each, to count them. A crawl without sitemap
// lastmods reads none.
func (s *Store) CountBySource(agedBefore map[string]time.Time) (map[string]*frontier.SourceCounts, map[string]int, error) {
	ctx := context.Background()
	aged := map[string]any{}
	for src, cut := range agedBefore {
		aged[src] = map[string]any{"bool": map[string]any{"filter": []any{
			map[string]any{"term": map[string]any{"source": src}},
			map[string]any{"terms": map[string]any{"state": []int{int(frontier.Fetched), int(frontier.Error)}}},
			map[string]any{"range": map[string]any{"checked_at": map[string]any{"lt": nanos(cut)}}},
		}}}
	}
	aggs := map[string]any{"sources": map[string]any{"terms": map[string]any{"field": "source", "size": maxBuckets},
		"aggs": map[string]any{"states": map[string]any{"terms": map[string]any{"field": "state", "size": 16},
			"aggs": map[string]any{"reasons": map[string]any{"terms": map[string]any{"field": "reason", "size": maxBuckets}}}}}}}
	if len(aged) > 0 {
		aggs["aged"] = map[string]any{"filters": map[string]any{"filters": aged}}
	}
	type bucket struct {
		Key      any   `json:"key"`
		DocCount int64 `json:"doc_count"`
	}
	var ans struct {
		Aggregations struct {
			Sources struct {
				Buckets []struct {
					bucket
					States struct {
						Buckets []struct {
							bucket
							Reasons struct {
								Other   int64    `json:"sum_other_doc_count"`
								Buckets []bucket `json:"buckets"`
							} `json:"reasons"`
						} `json:"buckets"`
					} `json:"states"`
				} `json:"buckets"`
			} `json:"sources"`
			Aged struct {
				Buckets map[string]bucket `json:"buckets"`
			} `json:"aged"`
		} `json:"aggregations"`
	}
	body := map[string]any{"size": 0, "aggs": aggs}
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_search", body, &ans); err != nil {
		return nil, nil, &Error{Op: "count URLs by state", Err: err}
	}
	counts := map[string]*frontier.SourceCounts{}
	for _, sb := range ans.Aggregations.Sources.Buckets {
		src, _ := sb.Key.(string)
		c := &frontier.SourceCounts{Reasons: map[frontier.State]map[string]int{}}
		counts[src] = c
		for _, st := range sb.States.Buckets {
			n, _ := st.Key.(float64)
			state := frontier.State(n)
			if int(state) >= len(c.States) {
				continue // not a state this build knows: a newer writer's
			}
			c.States[state] += int(st.DocCount)
			if state != frontier.Error && state != frontier.Excluded {
				continue
			}
			m := map[string]int{}
			for _, r := range st.Reasons.Buckets {
				reason, _ := r.Key.(string)
				m[reason] = int(r.DocCount)
			}
			if st.Reasons.Other > 0 {
				m[otherReasons] = int(st.Reasons.Other)
			}
			// A record without a reason has no reason field: count it
			// under "" as Add does.
			listed := 0
			for _, v := range m {
				listed += v
			}
			if rest := int(st.DocCount) - listed; rest > 0 {
				m[""] += rest
			}
			c.Reasons[state] = m
		}
	}
	due := map[string]int{}
	for src, b := range ans.Aggregations.Aged.Buckets {
		due[src] = int(b.DocCount)
	}
	if err := s.countNewerLastmod(ctx, agedBefore, due); err != nil {
		return nil, nil, err
	}
	s.countLeased(counts)
	return counts, due, nil
}

// maxBuckets bounds the sources and the reasons per state counted one by
// one (a crawl has a few of each); reasons past it are counted under
// otherReasons.
const maxBuckets = 10000

// otherReasons names what is past maxBuckets.
const otherReasons = "(other)"

// countNewerLastmod adds to due the Fetched URLs of each source of cuts
// whose sitemap lastmod is newer than their fetch and whose check is not
// older than the cut (those the aggregation counted already).
func (s *Store) countNewerLastmod(ctx context.Context, cuts map[string]time.Time, due map[string]int) error {
	if len(cuts) == 0 {
		return nil
	}
	sources := slices.Collect(func(yield func(string) bool) {
		for src := range cuts {
			if !yield(src) {
				return
			}
		}
	})
	filter := []any{
		map[string]any{"terms": map[string]any{"source": sources}},
		map[string]any{"term": map[string]any{"state": int(frontier.Fetched)}},
		map[string]any{"range": map[string]any{"lastmod": map[string]any{"gt": 0}}},
	}
	var after []any
	for {
		body := map[string]any{"size": pageSize, "sort": []any{map[string]any{"url": "asc"}},
			"_source": []string{"source", "lastmod", "fetched_at", "checked_at"},
			"query":   map[string]any{"bool": map[string]any{"filter": filter}}}
		if after != nil {
			body["search_after"] = after
		}
		var ans struct {
			Hits struct {
				Hits []struct {
					Source struct {
						Source    string `json:"source"`
						Lastmod   int64  `json:"lastmod"`
						FetchedAt int64  `json:"fetched_at"`
						CheckedAt int64  `json:"checked_at"`
					} `json:"_source"`
					Sort []any `json:"sort"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_search", body, &ans); err != nil {
			return &Error{Op: "count URLs with a newer lastmod", Err: err}
		}
		for _, h := range ans.Hits.Hits {
			d := &h.Source
			if fromNanos(d.CheckedAt).Before(cuts[d.Source]) {
				continue // counted as checked too long ago
			}
			if fromNanos(d.Lastmod).After(fromNanos(d.FetchedAt)) {
				due[d.Source]++
			}
		}
		if len(ans.Hits.Hits) < pageSize {
			return nil
		}
		after = ans.Hits.Hits[len(ans.Hits.Hits)-1].Sort
	}
}

// countLeased moves the URLs this process has leased from Waiting to
// InFlight.
func (s *Store) countLeased(counts map[string]*frontier.SourceCounts) {
	q := s.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	for _, l := range q.leases {
		if c := counts[l.rec.Source]; c != nil && c.States[frontier.Waiting] > 0 {
			c.States[frontier.Waiting]--
			c.States[frontier.InFlight]++
		}
	}
}
