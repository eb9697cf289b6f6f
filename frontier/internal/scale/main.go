// Command scale measures the frontier at crawl scale: insert and pop rates,
// bytes per URL on disk, open time, peak RSS and heap.
//
//	go run ./frontier/internal/scale -n 1000000 -hosts 1000
//
// -bolt stock runs with bbolt's default options, for before/after figures;
// -links N stores N outlinks with each completion and times a walk over them.
// It times with the machine's clock, not a crawler's: it measures.
package main

import (
	"bufio"
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	bolt "go.etcd.io/bbolt"
)

func main() {
	n := flag.Int("n", 1_000_000, "URLs")
	hosts := flag.Int("hosts", 1000, "hosts")
	workers := flag.Int("workers", 32, "concurrent workers adding pages and completing leases")
	page := flag.Int("page", 100, "links per Add (one page's links, one host)")
	via := flag.Bool("via", false, "store the referrer with every URL")
	boltMode := flag.String("bolt", "tuned", "tuned (the package's options) or stock (bbolt defaults)")
	dir := flag.String("dir", "", "state directory (default: a new temporary one, removed after)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the pop phase")
	pop := flag.Int("pop", -1, "leases to complete after the insert (default: every URL)")
	cycles := flag.Int("cycles", 0, "refresh cycles after the first pass: RequeueDue of every URL, then fetch all again")
	links := flag.Int("links", 0, "outlinks stored with each completion (Outcome.ReadLinks), as a page's in-scope links")
	flag.Parse()

	if *dir == "" {
		d, err := os.MkdirTemp("", "frontier-scale-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	var bo *bolt.Options
	switch *boltMode {
	case "tuned":
	case "stock":
		bo = &bolt.Options{Timeout: 2 * time.Second}
	default:
		log.Fatalf("-bolt %s: want tuned or stock", *boltMode)
	}
	opt := frontier.Options{
		Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 4} },
		Bolt:   bo,
	}
	stopPeak := watchPeaks()

	f, err := frontier.Open(*dir, opt)
	if err != nil {
		log.Fatal(err)
	}
	pages := (*n + *page - 1) / *page
	urlOf := func(i int) string {
		return fmt.Sprintf("https://www%d.example.org/docs/section-%d/page-%d.html", i / *page % *hosts, i%53, i)
	}
	var next atomic.Int64
	start := time.Now()
	parallel(*workers, func() {
		items := make([]frontier.Item, 0, *page)
		for {
			p := int(next.Add(1) - 1)
			if p >= pages {
				return
			}
			items = items[:0]
			host := p % *hosts
			for i := p * *page; i < min((p+1)**page, *n); i++ {
				it := frontier.Item{
					URL:    urlOf(i),
					Source: "scale", Depth: 4, Class: frontier.IndexFollow,
				}
				if *via {
					it.Via = fmt.Sprintf("https://www%d.example.org/docs/index-%d.html", host, p)
				}
				items = append(items, it)
			}
			if _, err := f.Add(items...); err != nil {
				log.Fatal(err)
			}
		}
	})
	insert := time.Since(start)
	report("insert", *n, insert)
	dbFile := filepath.Join(*dir, "frontier.db")

	start = time.Now()
	if _, err := f.Add(frontier.Item{URL: "https://www0.example.org/docs/section-0/page-0.html", Class: frontier.IndexFollow}); err != nil {
		log.Fatal(err)
	}
	known := min(200_000, *n)
	next.Store(0)
	parallel(*workers, func() {
		items := make([]frontier.Item, *page)
		for {
			p := int(next.Add(1) - 1)
			if p*(*page) >= known {
				return
			}
			for j := range items {
				i := p**page + j
				items[j] = frontier.Item{URL: fmt.Sprintf("https://www%d.example.org/docs/section-%d/page-%d.html", p%*hosts, i%53, i), Class: frontier.IndexFollow}
			}
			if _, err := f.Add(items...); err != nil {
				log.Fatal(err)
			}
		}
	})
	report("re-add known", known, time.Since(start))

	if err := f.Close(); err != nil {
		log.Fatal(err)
	}
	size("all waiting", dbFile, *n)
	start = time.Now()
	if f, err = frontier.Open(*dir, opt); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%-14s %v (rebuilds %d hosts' queues)\n", "open", time.Since(start).Round(time.Millisecond), f.Stats().Hosts)

	var popped atomic.Int64
	// Each worker waits for its outcome to be stored, as Complete did
	// before the store's interface kept only the crawler's CompleteAsync.
	complete := func(l frontier.Lease, out []uint64) error {
		o := frontier.Outcome{State: frontier.Fetched, Status: 200,
			ETag: `"5f3c-62a1b7c0e2d40"`, LastModified: "Tue, 11 Mar 2025 09:12:44 GMT",
			Hash: "9f86d081884c7d659a2feaa0c55ad015"}
		if *links > 0 {
			// Links to pages spread over the whole set, so a walk from page 0
			// reaches nearly all of them.
			u := l.Item().URL
			i, _ := strconv.Atoi(u[strings.LastIndex(u, "-")+1 : len(u)-len(".html")])
			for j := range out {
				out[j] = frontier.LinkKey(urlOf((i*31 + j*7919 + 1) % *n))
			}
			o.ReadLinks, o.Links = true, out
		}
		done := make(chan error, 1)
		if err := l.CompleteAsync(o, func(err error) { done <- err }); err != nil {
			return err
		}
		return <-done
	}
	if *cpuprofile != "" {
		fh, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(fh)
		defer pprof.StopCPUProfile()
	}
	start = time.Now()
	parallel(*workers, func() {
		out := make([]uint64, *links)
		for {
			if *pop >= 0 && popped.Load() >= int64(*pop) {
				return
			}
			l, err := f.Next(context.Background())
			if err != nil {
				return
			}
			if err := complete(l, out); err != nil {
				log.Fatal(err)
			}
			popped.Add(1)
		}
	})
	report("next+complete", int(popped.Load()), time.Since(start))
	for c := range *cycles {
		start = time.Now()
		n, err := f.RequeueDue("", time.Now().Add(time.Hour))
		if err != nil {
			log.Fatal(err)
		}
		report(fmt.Sprintf("requeue %d", c+1), n, time.Since(start))
		popped.Store(0)
		start = time.Now()
		parallel(*workers, func() {
			out := make([]uint64, *links)
			for {
				l, err := f.Next(context.Background())
				if err != nil {
					return
				}
				if err := complete(l, out); err != nil {
					log.Fatal(err)
				}
				popped.Add(1)
			}
		})
		report(fmt.Sprintf("refresh %d", c+1), int(popped.Load()), time.Since(start))
	}

	if *links > 0 {
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start = time.Now()
		r, err := f.Reach([]uint64{frontier.LinkKey(urlOf(0))})
		if err != nil {
			log.Fatal(err)
		}
		took := time.Since(start)
		runtime.GC() // what stays is the set
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		fmt.Printf("%-14s %d URLs reached in %v: %.0f URLs/s, set %.0f B/URL\n", "reach", r.Len(), took.Round(time.Millisecond),
			float64(r.Len())/took.Seconds(), float64(after.HeapAlloc-before.HeapAlloc)/float64(r.Len()))
	}
	start = time.Now()
	counts, err := f.Counts()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%-14s %v (%d fetched)\n", "counts walk", time.Since(start).Round(time.Millisecond), counts["scale"].States[frontier.Fetched])
	f.Close()
	size("all fetched", dbFile, *n)
	rss, anon, heap := stopPeak()
	fmt.Printf("%-14s VmHWM %.0f MiB (file-backed mmap pages included), RssAnon %.0f MiB, heap in use %.0f MiB\n",
		"peak memory", mib(rss), mib(anon), mib(heap))
}

func parallel(n int, fn func()) {
	var wg sync.WaitGroup
	for range n {
		wg.Go(fn)
	}
	wg.Wait()
}

func report(what string, n int, d time.Duration) {
	fmt.Printf("%-14s %d URLs in %v: %.0f URLs/s\n", what, n, d.Round(time.Millisecond), float64(n)/d.Seconds())
}

func size(what, path string, n int) {
	st, err := os.Stat(path)
	if err != nil {
		log.Fatal(err)
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		fmt.Printf("%-14s file %d MiB, %.0f B/URL\n", what, st.Size()>>20, float64(st.Size())/float64(n))
		return
	}
	defer db.Close()
	var used int64
	db.View(func(tx *bolt.Tx) error {
		return tx.ForEach(func(_ []byte, b *bolt.Bucket) error {
			s := b.Stats()
			used += int64(s.BranchAlloc + s.LeafAlloc)
			return nil
		})
	})
	fmt.Printf("%-14s file %d MiB, %.0f B/URL; pages in use %.0f B/URL\n", what, st.Size()>>20,
		float64(st.Size())/float64(n), float64(used)/float64(n))
}

// watchPeaks samples the heap and anonymous RSS; VmHWM is the kernel's peak.
func watchPeaks() func() (rss, anon, heap uint64) {
	var peakAnon, peakHeap atomic.Uint64
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		var ms runtime.MemStats
		for {
			runtime.ReadMemStats(&ms)
			peakHeap.Store(max(peakHeap.Load(), ms.HeapInuse))
			peakAnon.Store(max(peakAnon.Load(), status("RssAnon")))
			select {
			case <-stop:
				return
			case <-t.C:
			}
		}
	}()
	return func() (uint64, uint64, uint64) {
		close(stop)
		<-done
		return status("VmHWM"), peakAnon.Load(), peakHeap.Load()
	}
}

func status(field string) uint64 {
	fh, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer fh.Close()
	sc := bufio.NewScanner(fh)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), field+":"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func mib(b uint64) float64 { return float64(b) / (1 << 20) }
