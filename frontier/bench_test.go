package frontier

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"

	bolt "go.etcd.io/bbolt"
)

const benchHosts = 100

// benchItems are URLs in pages of 100 links to one host, as a site's pages
// link mostly within the site, the hosts taking turns page by page.
func benchItems(from, n int) []Item {
	items := make([]Item, n)
	for i := range items {
		j := from + i
		items[i] = Item{
			URL:    fmt.Sprintf("https://www%d.example.org/section/%d/page-%d.html", j/100%benchHosts, j%37, j),
			Source: "bench", Depth: 3, Class: IndexFollow,
		}
	}
	return items
}

// reportWrites reports the bytes bbolt wrote per operation since before.
func reportWrites(b *testing.B, f *Frontier, before bolt.Stats) {
	after := f.db.Stats()
	d := after.Sub(&before)
	b.ReportMetric(float64(d.TxStats.GetPageAlloc())/float64(b.N), "B-written/op")
}

// BenchmarkAdd queues new URLs the way a crawl does: one Add per page with
// its 100 links. ns/op is per URL.
func BenchmarkAdd(b *testing.B) {
	f := openTest(b, "", Options{})
	const page = 100
	items := benchItems(0, b.N+page)
	before := f.db.Stats()
	b.ResetTimer()
	for i := 0; i < b.N; i += page {
		if _, err := f.Add(items[i:min(i+page, b.N)]...); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	reportWrites(b, f, before)
}

// BenchmarkAddKnown is the common case of a link to a page already known.
func BenchmarkAddKnown(b *testing.B) {
	f := openTest(b, "", Options{})
	const page = 100
	known := benchItems(0, 10000)
	for i := 0; i < len(known); i += 1000 {
		mustAdd(b, f, known[i:i+1000]...)
	}
	b.ResetTimer()
	for i := 0; i < b.N; i += page {
		j := i % len(known)
		if _, err := f.Add(known[j:min(j+page, len(known), j+b.N-i)]...); err != nil {
			b.Fatal(err)
		}
	}
}

func fill(b *testing.B, f *Frontier, n int) {
	for i := 0; i < n; i += 1000 {
		mustAdd(b, f, benchItems(i, min(1000, n-i))...)
	}
}

// BenchmarkNextComplete leases and completes from one goroutine: each
// Complete waits for its own commit.
func BenchmarkNextComplete(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(4, 0)})
	fill(b, f, b.N)
	before := f.db.Stats()
	b.ResetTimer()
	defer func() { b.StopTimer(); reportWrites(b, f, before) }()
	for range b.N {
		l, _, err := f.TryNext()
		if err != nil || l == nil {
			b.Fatal(l, err)
		}
		if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: "0123456789abcdef"}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkNextCompleteParallel runs 32 workers, as a crawl does; their
// completions share commits.
func BenchmarkNextCompleteParallel(b *testing.B) {
	nextCompleteParallel(b, Options{Policy: policy(4, 0)})
}

// nextCompleteParallel fills a frontier opened with opt with b.N URLs and
// has 32 workers lease and complete them.
func nextCompleteParallel(b *testing.B, opt Options) {
	f := openTest(b, "", opt)
	fill(b, f, b.N)
	before := f.db.Stats()
	b.ResetTimer()
	defer func() { b.StopTimer(); reportWrites(b, f, before) }()
	var wg sync.WaitGroup
	for range 32 {
		wg.Go(func() {
			for {
				l, err := f.next(context.Background())
				if err != nil {
					return
				}
				if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: "0123456789abcdef"}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
}

// BenchmarkTryNextRelease is the scheduler and the disk read alone.
func BenchmarkTryNextRelease(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(4, 0)})
	fill(b, f, 10000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		l, _, err := f.TryNext()
		if err != nil || l == nil {
			b.Fatal(l, err)
		}
		l.Release()
	}
}

// BenchmarkNextCompleteInAGroup is BenchmarkNextComplete with each page
// joining a group of duplicates, as every indexed page does unless its
// source keeps duplicates: the cost of regrouping.
func BenchmarkNextCompleteInAGroup(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(4, 0)})
	fill(b, f, b.N)
	before := f.db.Stats()
	b.ResetTimer()
	defer func() { b.StopTimer(); reportWrites(b, f, before) }()
	for i := range b.N {
		l, _, err := f.TryNext()
		if err != nil || l == nil {
			b.Fatal(l, err)
		}
		content := strconv.Itoa(i)
		if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: content, Content: content, Claim: 1}); err != nil {
			b.Fatal(err)
		}
	}
}
