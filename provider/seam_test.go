package provider_test

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

// countingStore is a frontier.Store that counts the calls it passes on,
// the leases' included: a second implementation of the seam, so a crawl
// that runs through it runs through the interface alone.
type countingStore struct {
	store frontier.Store
	mu    sync.Mutex
	calls map[string]int
}

func (s *countingStore) count(name string) {
	s.mu.Lock()
	s.calls[name]++
	s.mu.Unlock()
}

func (s *countingStore) Next(ctx context.Context) (frontier.Lease, error) {
	s.count("Next")
	l, err := s.store.Next(ctx)
	if l == nil {
		return nil, err
	}
	return &countingLease{Lease: l, s: s}, err
}

func (s *countingStore) Add(items ...frontier.Item) (int, error) {
	s.count("Add")
	return s.store.Add(items...)
}

func (s *countingStore) Exclude(reason string, items ...frontier.Item) (int, error) {
	s.count("Exclude")
	return s.store.Exclude(reason, items...)
}

func (s *countingStore) Backoff(hostKey string, until time.Time) {
	s.count("Backoff")
	s.store.Backoff(hostKey, until)
}

func (s *countingStore) Request(ctx context.Context, hostKey string) (func(), error) {
	s.count("Request")
	return s.store.Request(ctx, hostKey)
}

func (s *countingStore) Stats() frontier.Stats { s.count("Stats"); return s.store.Stats() }

func (s *countingStore) Pending() ([]frontier.Record, error) {
	s.count("Pending")
	return s.store.Pending()
}

func (s *countingStore) Acknowledge(acks []frontier.Ack) ([]error, error) {
	s.count("Acknowledge")
	return s.store.Acknowledge(acks)
}

func (s *countingStore) Refetch(urls []string) error {
	s.count("Refetch")
	return s.store.Refetch(urls)
}

func (s *countingStore) Held(source string) ([]frontier.Record, error) {
	s.count("Held")
	return s.store.Held(source)
}

func (s *countingStore) MoveHeld(urls []string, to string, ev frontier.Event) ([]frontier.Record, error) {
	s.count("MoveHeld")
	return s.store.MoveHeld(urls, to, ev)
}

func (s *countingStore) Pause(sources []string) error {
	s.count("Pause")
	return s.store.Pause(sources)
}

func (s *countingStore) Recrawl(urls []string, class frontier.Class) ([]error, error) {
	s.count("Recrawl")
	return s.store.Recrawl(urls, class)
}

func (s *countingStore) Remove(urls []string, reason string) ([]frontier.Record, []error, error) {
	s.count("Remove")
	return s.store.Remove(urls, reason)
}

func (s *countingStore) Get(url string) (frontier.Record, bool, error) {
	s.count("Get")
	return s.store.Get(url)
}

func (s *countingStore) Scan(q frontier.Query) ([]frontier.Record, string, error) {
	s.count("Scan")
	return s.store.Scan(q)
}

func (s *countingStore) Reapply(v []frontier.Verdict) (int, int, error) {
	s.count("Reapply")
	return s.store.Reapply(v)
}

func (s *countingStore) Drop(v []frontier.Verdict) (int, error) {
	s.count("Drop")
	return s.store.Drop(v)
}

func (s *countingStore) RequeueDue(source string, olderThan time.Time) (int, error) {
	s.count("RequeueDue")
	return s.store.RequeueDue(source, olderThan)
}

func (s *countingStore) RequeueErrors(source string) (int, error) {
	s.count("RequeueErrors")
	return s.store.RequeueErrors(source)
}

func (s *countingStore) RequeueIndexed() (int, error) {
	s.count("RequeueIndexed")
	return s.store.RequeueIndexed()
}

func (s *countingStore) Links(key string) ([]uint64, bool, error) {
	s.count("Links")
	return s.store.Links(key)
}

func (s *countingStore) SetLinks(key string, links []uint64) error {
	s.count("SetLinks")
	return s.store.SetLinks(key, links)
}

func (s *countingStore) Reach(roots []uint64) (*frontier.Reached, error) {
	s.count("Reach")
	return s.store.Reach(roots)
}

func (s *countingStore) Orphans(urls []string, c frontier.OrphanChange) ([]frontier.Record, error) {
	s.count("Orphans")
	return s.store.Orphans(urls, c)
}

func (s *countingStore) Cycle() uint64 { s.count("Cycle"); return s.store.Cycle() }

func (s *countingStore) BeginCycle() (uint64, error) {
	s.count("BeginCycle")
	return s.store.BeginCycle()
}

func (s *countingStore) GetMeta(key string) ([]byte, error) {
	s.count("GetMeta")
	return s.store.GetMeta(key)
}

func (s *countingStore) PutMeta(key string, value []byte) error {
	s.count("PutMeta")
	return s.store.PutMeta(key, value)
}

type countingLease struct {
	frontier.Lease
	s *countingStore
}

func (l *countingLease) CompleteAsync(o frontier.Outcome, done func(error)) error {
	l.s.count("CompleteAsync")
	return l.Lease.CompleteAsync(o, done)
}

func (l *countingLease) Release() { l.s.count("Release"); l.Lease.Release() }

func TestCrawlRunsThroughTheStoreInterface(t *testing.T) {
	t.Parallel()
	cfg, out, _ := demoIntoFile(t)
	counted := &countingStore{calls: map[string]int{}}
	c := crawltest.New(t, cfg)
	provider.WrapStore(c, func(s frontier.Store) frontier.Store { counted.store = s; return counted })
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if report.Total.Written != len(demoPages) {
		t.Errorf("report counts %d written, want %d", report.Total.Written, len(demoPages))
	}
	if n := len(readBulk(t, out)); n != len(demoPages) {
		t.Errorf("%d bulk actions, want %d", n, len(demoPages))
	}
	calls := counted.calls
	// Every page fetched (the 404 and the Word 97 file no reader takes
	// without Tika too) was leased and completed through the interface,
	// and every write recorded, sent and acknowledged.
	if calls["CompleteAsync"] != len(demoPages)+2 {
		t.Errorf("%d outcomes through the interface, want %d: %v", calls["CompleteAsync"], len(demoPages)+2, calls)
	}
	for _, m := range []string{"Next", "Add", "BeginCycle", "Pending", "Acknowledge", "SetLinks", "Reach", "Scan", "PutMeta"} {
		if calls[m] == 0 {
			t.Errorf("no call of %s through the interface: %v", m, calls)
		}
	}
}
