package provider_test

import (
	"context"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
)

// The crawl of TestCrawlRunsThroughTheStoreInterface, through the state
// store kept in Elasticsearch.
func TestCrawlRunsThroughTheElasticsearchStateStore(t *testing.T) {
	t.Parallel()
	cfg, out, base := demoIntoFile(t)
	es, err := esclient.New(esclient.Config{Addresses: []string{estest.URL(t)}})
	if err != nil {
		t.Fatal(err)
	}
	store, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: estest.Index(t),
		Node: "seam", Partitions: 4, LeaseTTL: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	counted := &countingStore{calls: map[string]int{}, store: store}
	c := crawltest.New(t, cfg)
	provider.WrapStore(c, func(frontier.Store) frontier.Store { return counted })
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if report.Total.Written != len(demoPages) {
		t.Errorf("report counts %d written, want %d", report.Total.Written, len(demoPages))
	}
	if n := len(readBulk(t, out)); n != len(demoPages) {
		t.Errorf("%d bulk actions, want %d", n, len(demoPages))
	}
	if counted.calls["CompleteAsync"] != len(demoPages)+2 {
		t.Errorf("%d outcomes, want %d: %v", counted.calls["CompleteAsync"], len(demoPages)+2, counted.calls)
	}
	for _, p := range demoPages {
		r, ok, err := store.Get(base + p)
		if err != nil || !ok || r.State != frontier.Fetched || !r.Indexed || r.Pending != "" {
			t.Errorf("%s: %+v (%v, %v), want Fetched, indexed, nothing pending", p, r, ok, err)
		}
	}
	// A second cycle finds every page unchanged: nothing written again.
	again, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if again.Total.Written != 0 {
		t.Errorf("the second cycle wrote %d documents, want 0", again.Total.Written)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
}
