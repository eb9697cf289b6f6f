package frontier

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

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

// BenchmarkPageLife is a page's whole life in the store as a crawl lives
// it, with history on: found (Add), leased and completed by one of 32
// workers with its outlinks and a pending index write, then acknowledged
// in batches of 64 as a sink answers. The store first holds
// CRAWLSPACE_BENCH_STORE pages (default 10,000) that went through the
// same life, so the figures are the cost of a page at that store size.
// ns/op and B-written/op are per page.
func BenchmarkPageLife(b *testing.B) {
	size := benchEnv(b, "CRAWLSPACE_BENCH_STORE", 10000)
	// CRAWLSPACE_BENCH_PAGESIZE measures another bbolt page size.
	bo := DefaultBoltOptions()
	bo.PageSize = benchEnv(b, "CRAWLSPACE_BENCH_PAGESIZE", 0)
	f := openTest(b, "", Options{Policy: policy(4, 0), History: DefaultHistory, Bolt: bo})
	fill(b, f, size+b.N)
	// The outlinks name URLs anywhere in the store; their keys are made
	// here so that the figures are the store's alone.
	keys := make([]uint64, size+b.N)
	for i := range keys {
		keys[i] = LinkKey(benchItems(i, 1)[0].URL)
	}
	pageLives(b, f, size, keys)
	before, cpu := f.db.Stats(), cpuTime(b)
	b.ResetTimer()
	pageLives(b, f, b.N, keys)
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	reportWrites(b, f, before)
}

// benchEnv is the number in the environment variable name, or def.
func benchEnv(b *testing.B, name string, def int) int {
	s := os.Getenv(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// pageLives leases, completes and acknowledges n pages, each linking 20
// of keys.
func pageLives(b *testing.B, f *Frontier, n int, keys []uint64) {
	acked := make(chan string, 1024)
	ackDone := make(chan struct{})
	go func() {
		defer close(ackDone)
		batch := make([]Ack, 0, 64)
		flush := func() {
			if len(batch) == 0 {
				return
			}
			if _, err := f.Acknowledge(batch); err != nil {
				b.Error(err)
			}
			batch = batch[:0]
		}
		for u := range acked {
			batch = append(batch, Ack{URL: u, Event: Event{Kind: EventWriteDone, Reason: "created"}})
			if len(batch) == cap(batch) {
				flush()
			}
		}
		flush()
	}()
	var tickets atomic.Int64
	var wg, calls sync.WaitGroup
	for w := range 32 {
		wg.Go(func() {
			rng := uint64(w + 1)
			for tickets.Add(1) <= int64(n) {
				l, err := f.next(context.Background())
				if err != nil || l == nil {
					b.Error(l, err)
					return
				}
				u := l.Item().URL
				links := make([]uint64, 20)
				for i := range links {
					rng = rng*6364136223846793005 + 1442695040888963407
					links[i] = keys[int(rng>>33)%len(keys)]
				}
				l.Fetched(10000, time.Millisecond)
				calls.Add(1)
				o := Outcome{State: Fetched, Status: 200, Hash: "0123456789abcdef", Pending: PendingIndex,
					DocID: u, ReadLinks: true, Links: links,
					History: []Event{{Kind: EventWriteSent, Reason: "index"}}}
				if err := l.CompleteAsync(o, func(err error) {
					if err != nil {
						b.Error(err)
					}
					acked <- u
					calls.Done()
				}); err != nil {
					b.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	calls.Wait()
	close(acked)
	<-ackDone
}

// cpuTime is the CPU the process has used, user and system: on shared
// cores it is steadier than the time taken.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkUnchangedRecheck is an unchanged re-crawl in the store, with
// history on: b.N pages, each fetched once into a group of duplicates of
// its own, are queued for their aged check (RequeueDue) and completed by
// 32 workers with what a 304 gives (the same validators, group and
// claim), as the crawler does. ns/op, cpu-ns/op and B-written/op are per
// page, the sweep included.
func BenchmarkUnchangedRecheck(b *testing.B) {
	f := openTest(b, "", Options{Policy: policy(32, 0), History: DefaultHistory})
	fill(b, f, b.N)
	outcome := func(u string) Outcome {
		return Outcome{State: Fetched, Status: 200, ETag: `"e"`, Hash: u, Content: u, Claim: 7}
	}
	recheck := func(status int) {
		var tickets atomic.Int64
		var wg, calls sync.WaitGroup
		for range 32 {
			wg.Go(func() {
				for tickets.Add(1) <= int64(b.N) {
					l, err := f.next(context.Background())
					if err != nil || l == nil {
						b.Error(l, err)
						return
					}
					o := outcome(l.Item().URL)
					o.Status = status
					l.Fetched(0, time.Millisecond)
					calls.Add(1)
					if err := l.CompleteAsync(o, func(err error) {
						if err != nil {
							b.Error(err)
						}
						calls.Done()
					}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		calls.Wait()
	}
	recheck(200)
	before, cpu := f.db.Stats(), cpuTime(b)
	b.ResetTimer()
	if n, err := f.RequeueDue("", time.Now().Add(time.Hour)); err != nil || n != b.N {
		b.Fatal(n, err)
	}
	recheck(304)
	b.StopTimer()
	b.ReportMetric(float64(cpuTime(b)-cpu)/float64(b.N), "cpu-ns/op")
	reportWrites(b, f, before)
}
