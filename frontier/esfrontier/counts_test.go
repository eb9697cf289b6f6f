package esfrontier_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// openReader opens the crawl under prefix read-only, as status does.
func openReader(t *testing.T, prefix string) *esfrontier.Store {
	t.Helper()
	es, err := esclient.New(esclient.Config{Addresses: []string{estest.URL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	r, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: prefix, Node: "status",
		Partitions: 8, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// walkCounts is the count the status page made before the aggregation:
// every record read, a page at a time.
func walkCounts(t *testing.T, s *esfrontier.Store, cuts map[string]time.Time) (map[string]*frontier.SourceCounts, map[string]int) {
	t.Helper()
	counts, due := map[string]*frontier.SourceCounts{}, map[string]int{}
	err := frontier.ForEach(s, frontier.Query{}, func(r frontier.Record) error {
		c := counts[r.Source]
		if c == nil {
			c = &frontier.SourceCounts{Reasons: map[frontier.State]map[string]int{}}
			counts[r.Source] = c
		}
		c.Add(&r)
		if cut, ok := cuts[r.Source]; ok && frontier.AgedCheckDue(&r, cut) {
			due[r.Source]++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return counts, due
}

func TestCountsBySourceStateAndReasonFromOneAggregationAgreeWithEveryRecordRead(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	s := open(t, prefix, "a", 6*time.Second)
	s.BeginCycle()
	future := time.Now().Add(24 * time.Hour)
	var crawled []frontier.Item
	kind := map[string]int{}
	for i := range 16 {
		it := frontier.Item{URL: fmt.Sprintf("http://h%d.test/%d", i%8, i), Source: []string{"one", "two"}[i%2], Class: frontier.IndexFollow}
		if i%3 == 0 {
			it.Lastmod = future // a sitemap says it changed after its fetch
		}
		kind[it.URL] = i / 2 % 4
		crawled = append(crawled, it)
	}
	if _, err := s.Add(crawled...); err != nil {
		t.Fatal(err)
	}
	// Fetched, in Error for two reasons, and Excluded; completed while
	// the next are leased, the hosts' requests overlapping.
	var wg sync.WaitGroup
	failed := make(chan error, len(crawled))
	for {
		l, err := s.Next(context.Background())
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		o := frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h"}
		switch kind[l.Item().URL] {
		case 1:
			o = frontier.Outcome{State: frontier.Error, Status: 500, Reason: "http_500"}
		case 2:
			o = frontier.Outcome{State: frontier.Excluded, Status: 200, Reason: "noindex"}
		case 3:
			o = frontier.Outcome{State: frontier.Error, Reason: "timeout"}
		}
		wg.Add(1)
		if err := l.CompleteAsync(o, func(err error) {
			if err != nil {
				failed <- err
			}
			wg.Done()
		}); err != nil {
			t.Fatal(err)
		}
	}
	wg.Wait()
	close(failed)
	for err := range failed {
		t.Fatal(err)
	}
	// A few thousand queued URLs more, and some refused ones.
	var queued, refused []frontier.Item
	for i := range 3000 {
		queued = append(queued, frontier.Item{URL: fmt.Sprintf("http://q%d.test/%d", i%30, i), Source: []string{"one", "two"}[i%2], Class: frontier.FollowOnly})
	}
	for i := range 40 {
		refused = append(refused, frontier.Item{URL: fmt.Sprintf("http://r.test/%d", i), Source: "two", Class: frontier.FollowOnly})
	}
	if _, err := s.Add(queued...); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Exclude("disallowed", refused...); err != nil {
		t.Fatal(err)
	}
	if err := s.Refresh(); err != nil {
		t.Fatal(err)
	}
	// Source one's cut is now: every fetched or failed URL is due; two's
	// is long ago: only those with a newer lastmod are.
	cuts := map[string]time.Time{"one": time.Now(), "two": time.Now().Add(-time.Hour)}

	// Counted by a reader (status's), whose requests are the counts' alone.
	r := openReader(t, prefix)
	before := r.Cost()
	wantCounts, wantDue := walkCounts(t, r, cuts)
	walked := r.Cost()
	counts, due, err := r.CountBySource(cuts)
	if err != nil {
		t.Fatal(err)
	}
	after := r.Cost()

	if !reflect.DeepEqual(counts, wantCounts) {
		for src := range wantCounts {
			t.Errorf("%s: aggregated %+v, every record read %+v", src, counts[src], wantCounts[src])
		}
	}
	if !reflect.DeepEqual(due, wantDue) {
		t.Errorf("aged checks due: aggregated %v, every record read %v", due, wantDue)
	}
	if due["one"] == 0 || due["two"] == 0 || counts["two"].States[frontier.Excluded] == 0 || counts["one"].States[frontier.Error] == 0 {
		t.Fatalf("the crawl did not make the states the test compares: %+v %+v, due %v", counts["one"], counts["two"], due)
	}
	walkReq, aggReq := walked.Requests-before.Requests, after.Requests-walked.Requests
	// The aggregation, and one page of the few URLs with a lastmod.
	if aggReq > 2 || aggReq >= walkReq {
		t.Errorf("the count took %d requests, the walk %d: want at most 2, fewer than the walk", aggReq, walkReq)
	}
	t.Logf("%d URLs: walk %d requests, %d bytes received; aggregation %d requests, %d bytes received",
		counts["one"].Total()+counts["two"].Total(), walkReq, walked.BytesReceived-before.BytesReceived,
		aggReq, after.BytesReceived-walked.BytesReceived)
}
