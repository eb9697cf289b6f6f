// Command layout measures what the place of a page's records in the store
// costs as the store grows (issue 20): records keyed by their URL, as the
// frontier kept them until store format 3, against records keyed by the
// order their URLs were found, with an index from URL to that key. It writes a first crawl's
// pattern straight to bbolt, with the frontier's options and syncs: each
// page's record is created when the page is found, rewritten when it is
// completed (with its outlinks beside it in a bucket of their own) and
// again when its document is acknowledged, a second later; completions
// come in the order the pages were found, as from one host's queue, and
// the URLs' own order is unrelated to it, as on the benchmark site.
//
//	go run ./frontier/internal/layout -n 1000000
//
// For each size in -at it prints the bytes written, the CPU and the wall
// time per page over the last tenth of the pages before that size: the
// cost of a page in a store of that size.
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/frontier"
)

func main() {
	n := flag.Int("n", 1_000_000, "pages")
	layout := flag.String("layout", "url", "url (records keyed by URL, as in store formats 1 and 2) or found (keyed by the order found, with an index, as in format 3)")
	batch := flag.Int("batch", 128, "completions a commit carries (the read pages that may wait for the disk)")
	ackLag := flag.Int("ack-lag", 1700, "pages completed between a page's completion and its acknowledgement (a second of the crawl)")
	at := flag.String("at", "10000,100000,1000000", "sizes to report at")
	dir := flag.String("dir", "", "directory for the store (default: a new temporary one, removed after)")
	flag.Parse()
	if *layout != "url" && *layout != "found" {
		log.Fatalf("-layout %s: want url or found", *layout)
	}
	var report []int
	for _, s := range strings.Split(*at, ",") {
		v, err := strconv.Atoi(s)
		if err != nil || v <= 0 || v > *n {
			log.Fatalf("-at %s: want sizes between 1 and -n", s)
		}
		report = append(report, v)
	}
	if *dir == "" {
		d, err := os.MkdirTemp("", "frontier-layout-")
		if err != nil {
			log.Fatal(err)
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	db, err := bolt.Open(filepath.Join(*dir, "layout.db"), 0o600, frontier.DefaultBoltOptions())
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	s := &sim{db: db, found: *layout == "found", rng: rand.New(rand.NewPCG(1, 2))}
	// The URLs' order is unrelated to the order they are found in.
	s.urlOf = s.rng.Perm(*n)
	if err := db.Update(func(tx *bolt.Tx) error {
		for _, b := range []string{"u", "l", "p", "q", "i"} {
			if _, err := tx.CreateBucketIfNotExists([]byte(b)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	fmt.Printf("layout %s, %d pages, %d completions a commit, acknowledgements %d pages behind\n", *layout, *n, *batch, *ackLag)
	fmt.Println("size\tB written/page\tCPU µs/page\twall µs/page\tstore MB")
	// Sixteen pages found before the first completes, as a start page's
	// links would be; each completion then finds one more, until all are.
	s.created = min(16, *n)
	if err := db.Update(func(tx *bolt.Tx) error {
		for p := range s.created {
			if err := s.create(tx, p); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		log.Fatal(err)
	}
	ri, mark := 0, sample{}
	for done, acked := 0, 0; done < *n; {
		end := min(done+*batch, *n)
		ackTo := max(min(end-*ackLag, end), acked)
		err := db.Update(func(tx *bolt.Tx) error {
			for p := done; p < end; p++ {
				if s.created < *n {
					if err := s.create(tx, s.created); err != nil {
						return err
					}
					s.created++
				}
				if err := s.complete(tx, p); err != nil {
					return err
				}
			}
			for p := acked; p < ackTo; p++ {
				if err := s.acknowledge(tx, p); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			log.Fatal(err)
		}
		done, acked = end, ackTo
		if ri < len(report) && done >= report[ri]-report[ri]/10 && mark.pages == 0 {
			mark = take(done)
		}
		if ri < len(report) && done >= report[ri] {
			now := take(done)
			pages := float64(now.pages - mark.pages)
			fi, _ := os.Stat(filepath.Join(*dir, "layout.db"))
			fmt.Printf("%d\t%.0f\t%.1f\t%.1f\t%d\n", report[ri], float64(now.written-mark.written)/pages,
				(now.cpu-mark.cpu).Seconds()*1e6/pages, now.wall.Sub(mark.wall).Seconds()*1e6/pages, fi.Size()>>20)
			ri++
			mark = sample{}
		}
	}
}

type sim struct {
	db      *bolt.DB
	found   bool
	rng     *rand.Rand
	urlOf   []int // page (in the order found) → its URL's number
	created int
}

func (s *sim) url(p int) []byte {
	return fmt.Appendf(nil, "http://127.0.0.1:41981/p/%07d", s.urlOf[p])
}

// key is where page p's record lives: its URL, or the order it was found in.
func (s *sim) key(p int) []byte {
	if s.found {
		return binary.BigEndian.AppendUint64(nil, uint64(p))
	}
	return s.url(p)
}

// grow rewrites page p's record with extra more bytes (its state, the
// validators, the events of its history).
func (s *sim) grow(tx *bolt.Tx, p, extra int) error {
	u, k := tx.Bucket([]byte("u")), s.key(p)
	v := u.Get(k)
	if v == nil {
		return fmt.Errorf("page %d has no record", p)
	}
	nv := make([]byte, len(v)+extra)
	copy(nv, v)
	s.fill(nv[len(v):])
	return u.Put(k, nv)
}

func (s *sim) fill(b []byte) {
	for i := range b {
		b[i] = byte(s.rng.Uint32())
	}
}

// create stores page p's record as it is found, with its queue entry
// (keyed in the order found in either layout) and, keyed by the order
// found, the index entry from its URL.
func (s *sim) create(tx *bolt.Tx, p int) error {
	rec := make([]byte, 160) // URL, source, state, times, the "queued" event
	s.fill(rec)
	if err := tx.Bucket([]byte("u")).Put(s.key(p), rec); err != nil {
		return err
	}
	if s.found {
		if err := tx.Bucket([]byte("i")).Put(s.url(p), s.key(p)); err != nil {
			return err
		}
	}
	return tx.Bucket([]byte("q")).Put(binary.BigEndian.AppendUint64(nil, uint64(p)), s.url(p))
}

// complete is page p's completion: its record rewritten (the validators,
// hash, pending write; the "fetched" and "write_sent" events), its 80
// outlinks stored, its pending write listed.
func (s *sim) complete(tx *bolt.Tx, p int) error {
	if err := s.grow(tx, p, 180); err != nil {
		return err
	}
	links := make([]byte, 80*8)
	s.fill(links)
	if err := tx.Bucket([]byte("l")).Put(s.key(p), links); err != nil {
		return err
	}
	return tx.Bucket([]byte("p")).Put(s.key(p), nil)
}

// acknowledge is the index's acknowledgement of page p's document.
func (s *sim) acknowledge(tx *bolt.Tx, p int) error {
	if err := s.grow(tx, p, 40); err != nil {
		return err
	}
	return tx.Bucket([]byte("p")).Delete(s.key(p))
}

type sample struct {
	pages   int
	written int64
	cpu     time.Duration
	wall    time.Time
}

func take(pages int) sample {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		log.Fatal(err)
	}
	return sample{pages: pages, written: writtenBytes(), wall: time.Now(),
		cpu: time.Duration(ru.Utime.Nano() + ru.Stime.Nano())}
}

// writtenBytes is what the process has caused to be written to storage.
func writtenBytes() int64 {
	b, err := os.ReadFile("/proc/self/io")
	if err != nil {
		log.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				log.Fatal(err)
			}
			return n
		}
	}
	log.Fatal("no write_bytes in /proc/self/io")
	return 0
}
