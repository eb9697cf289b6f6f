package frontier

import (
	"bytes"
	"encoding/binary"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Whole-store walks. Each reads or rewrites a chunk of records per
// transaction, so a walk over millions of URLs neither holds one read
// transaction for long (which would stall writers needing to grow the file)
// nor builds one huge write transaction in memory, and callbacks run outside
// any transaction, free to call the Frontier.

const (
	readChunk  = 1024
	writeChunk = 2048
)

// Query selects the records of a Scan.
type Query struct {
	// Source selects one source's records; "" all.
	Source string
	// States selects the records stored in one of them (a leased URL is
	// stored Waiting, and read InFlight); none selects every state.
	States []State
	// After is where the previous page ended, as Scan returned it (""
	// for the first page).
	After string
}

// Scan returns the next page of the records q selects, in the store's
// order (by host, then in the order found), and where it ended: of
// readChunk records read in one read transaction, so a walk over millions
// of URLs never holds one open long enough to stall writers that must grow
// the file. A page may be empty while next is not.
func (f *Frontier) Scan(q Query) ([]Record, string, error) {
	var mask uint32
	for _, s := range q.States {
		mask |= 1 << s
	}
	var after []byte
	if q.After != "" {
		after = []byte(q.After)
	}
	recs, next, err := f.scanPage(nil, after, mask, q.Source)
	return recs, string(next), err
}

// ForEach calls fn with every record q selects (from q.After on), page by
// page from s.Scan: fn runs outside the store, free to call it. Records
// changed during the walk may be seen in either state.
func ForEach(s Scanner, q Query, fn func(Record) error) error {
	for {
		recs, next, err := s.Scan(q)
		if err != nil {
			return err
		}
		for i := range recs {
			if err := fn(recs[i]); err != nil {
				return err
			}
		}
		if next == "" {
			return nil
		}
		q.After = next
	}
}

// scan calls fn for every record in the store's order, InFlight for leased ones,
// outside any transaction. With index set it walks the URLs listed in that
// bucket instead.
func (f *Frontier) scan(index []byte, fn func(*Record) error) error {
	var after []byte
	for {
		recs, next, err := f.scanPage(index, after, 0, "")
		if err != nil {
			return err
		}
		for i := range recs {
			if err := fn(&recs[i]); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		after = next
	}
}

// scanPage reads up to readChunk records after the key after,
// keeping those of the states in mask (0 for all) and of source ("" for
// all), and returns the key to read the next page after: nil at the end.
func (f *Frontier) scanPage(index, after []byte, mask uint32, source string) ([]Record, []byte, error) {
	if f.shut.Load() {
		return nil, nil, ErrClosed
	}
	var (
		recs []Record
		next []byte
	)
	err := f.view(func(tx *bolt.Tx) error {
		recs, next = recs[:0], nil
		u := tx.Bucket(bucketRecords)
		b := u
		if index != nil {
			b = tx.Bucket(index)
		}
		c := b.Cursor()
		k, v := c.First()
		if after != nil {
			if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
				k, v = c.Next()
			}
		}
		var (
			hdr  Record
			prev []byte // valid for the transaction, like every key bbolt returns
		)
		for n := 0; k != nil; k, v = c.Next() {
			if isHistoryKey(k) {
				continue
			}
			if n == readChunk {
				next = append([]byte(nil), prev...)
				break
			}
			n++
			prev = k
			if index != nil {
				if v = u.Get(k); v == nil {
					continue
				}
			}
			if mask != 0 || source != "" {
				if err := decodeRecord(v, &hdr, source != ""); err != nil {
					return err
				}
				if mask != 0 && mask&(1<<hdr.State) == 0 || source != "" && hdr.Source != source {
					continue
				}
			}
			recs = append(recs, Record{})
			if err := decodeRecord(v, &recs[len(recs)-1], true); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	f.mu.Lock()
	for i := range recs {
		if l := f.leases[recs[i].URL]; l.inFlight() {
			recs[i].State = InFlight
		}
	}
	f.mu.Unlock()
	return recs, next, nil
}

// SourceCounts counts one source's URLs by state, and those in Error or
// Excluded by reason.
type SourceCounts struct {
	States  [numStates]int
	Reasons map[State]map[string]int
}

// Total is the number of URLs the source has.
func (c *SourceCounts) Total() int {
	n := 0
	for _, v := range c.States {
		n += v
	}
	return n
}

// Counts walks the store and counts URLs per source. It reads every record:
// for status pages and reports, not for every metrics scrape (see Stats).
func (f *Frontier) Counts() (map[string]*SourceCounts, error) {
	out := make(map[string]*SourceCounts)
	err := f.scan(nil, func(r *Record) error {
		c := out[r.Source]
		if c == nil {
			c = &SourceCounts{Reasons: make(map[State]map[string]int)}
			out[r.Source] = c
		}
		c.Add(r)
		return nil
	})
	return out, err
}

// Add counts r.
func (c *SourceCounts) Add(r *Record) {
	c.States[r.State]++
	if r.State == Error || r.State == Excluded {
		if c.Reasons == nil {
			c.Reasons = make(map[State]map[string]int)
		}
		m := c.Reasons[r.State]
		if m == nil {
			m = make(map[string]int)
			c.Reasons[r.State] = m
		}
		m[r.Reason]++
	}
}

// AgedCheckDue reports whether RequeueDue would queue r for an aged check
// with olderThan: Fetched or in Error and last checked before it, or
// Fetched with a sitemap lastmod newer than its fetch.
func AgedCheckDue(r *Record, olderThan time.Time) bool {
	return (r.State == Fetched || r.State == Error) && r.CheckedAt.Before(olderThan) ||
		r.State == Fetched && r.Lastmod.After(r.FetchedAt)
}

// sweep walks every record whose stored state is in states, in write
// transactions of writeChunk records, and calls change on each; change
// rewrites the record through w and reports whether it did.
func (f *Frontier) sweep(states uint32, change func(w *wtx, key []byte, r *Record, cl *claims, eff *effects) (bool, error)) (int, error) {
	type cand struct {
		key []byte
		rec Record
	}
	var (
		after []byte
		total int
		// Kept from chunk to chunk: a Record is large, and a chunk's
		// worth grown afresh each time was most of what a re-crawl's
		// RequeueDue allocated.
		cands []cand
	)
	for {
		var (
			n    int
			next []byte
			eff  effects
		)
		cl := claims{f: f}
		err := f.write(func(tx *bolt.Tx) error {
			n, next = 0, nil
			eff.reset()
			w := newWtx(tx)
			w.f = f
			c := w.u.Cursor()
			k, v := c.First()
			if after != nil {
				if k, v = c.Seek(after); k != nil && bytes.Equal(k, after) {
					k, v = c.Next()
				}
			}
			// Collect first: bbolt cursors do not survive writes to their bucket.
			cands = cands[:0]
			var hdr Record
			var prev []byte // valid for the transaction, like every key bbolt returns
			for i := 0; k != nil; k, v = c.Next() {
				if isHistoryKey(k) {
					continue
				}
				if i == writeChunk {
					next = append([]byte(nil), prev...) // the next chunk starts after it
					break
				}
				i++
				prev = k
				if err := decodeRecord(v, &hdr, false); err != nil {
					return err
				}
				if states&(1<<hdr.State) == 0 {
					continue
				}
				key := w.bytes(string(k))
				cands = append(cands, cand{key: key})
				if err := decodeRecord(v, &cands[len(cands)-1].rec, true); err != nil {
					return err
				}
			}
			for i := range cands {
				w.storedPending = cands[i].rec.Pending != ""
				ok, err := change(w, cands[i].key, &cands[i].rec, &cl, &eff)
				if err != nil {
					return err
				}
				if ok {
					n++
				}
			}
			return nil
		})
		cl.release()
		if err != nil {
			return total, err
		}
		total += n
		f.applyQueued(&eff)
		if next == nil {
			return total, nil
		}
		after = next
	}
}

// requeue queues a record met by sweep again as class c in the current
// cycle, why saying which sweep did, for its history. The change may have
// edited r.Pending already, so whether the pending index holds the URL
// comes from the record as stored.
func requeue(w *wtx, key []byte, r *Record, c Class, eff *effects, why string) error {
	r.Class, r.Reason, r.Cycle = c, "", w.cycle
	if err := w.enqueueHad(r, key, eff, w.storedPending); err != nil {
		return err
	}
	return w.sweepEvent(key, Event{Kind: EventRequeued, Class: c, Reason: why})
}

// RequeueErrors queues again every URL of source ("" for all) in Error,
// in its own class: FDSE's "Clear Error Cache". Error counts are kept, so
// an error that repeats is known to repeat.
func (f *Frontier) RequeueErrors(source string) (int, error) {
	return f.sweep(1<<Error, func(w *wtx, key []byte, r *Record, cl *claims, eff *effects) (bool, error) {
		if source != "" && r.Source != source || !cl.take(w, r) {
			return false, nil
		}
		return true, requeue(w, key, r, r.Class, eff, "clear_errors")
	})
}

// RequeueDue queues for an aged check, as Refresh, every URL of source (""
// for all) that is Fetched or in Error and was last checked before
// olderThan, or whose sitemap lastmod is newer than its last fetch. It
// writes a queue entry per URL and leaves the record as it is: the entry
// names the record and olderThan, and is leased while its record is still
// due by that cut (see pop). The record is rewritten once, by the check's
// outcome, and the requeued event is written with it. Called again in the
// same cycle (a resumed one), it passes over the URLs the last call queued,
// those checked before its cut; the returned count is of the entries
// written.
func (f *Frontier) RequeueDue(source string, olderThan time.Time) (int, error) {
	var prev time.Time
	cycle := f.cycle.Load()
	if err := f.view(func(tx *bolt.Tx) error {
		prev = readDueCut(tx, source, cycle)
		return nil
	}); err != nil {
		return 0, err
	}
	n, err := f.sweep(1<<Fetched|1<<Error, func(w *wtx, key []byte, r *Record, _ *claims, eff *effects) (bool, error) {
		if source != "" && r.Source != source {
			return false, nil
		}
		if !AgedCheckDue(r, olderThan) || r.CheckedAt.Before(prev) {
			return false, nil
		}
		return true, w.enqueueDue(r, key, eff, olderThan)
	})
	if err != nil {
		return n, err
	}
	return n, f.write(func(tx *bolt.Tx) error {
		return writeDueCut(tx, source, cycle, olderThan)
	})
}

// The cut of the last RequeueDue of each source ("" for all), with its
// cycle: keyDue | source → cycle (8 bytes) | cut (8, Unix nanoseconds).
var keyDue = []byte("due:")

// readDueCut gives the cut of source's last RequeueDue in cycle: the URLs
// checked before it have a queue entry already. Zero when the last one was
// in another cycle (its entries may be gone; queued again, a URL only has
// a second entry, which the first check leaves stale).
func readDueCut(tx *bolt.Tx, source string, cycle uint64) time.Time {
	v := tx.Bucket(bucketMeta).Get(dueKey(source))
	if len(v) != 16 || binary.BigEndian.Uint64(v) != cycle {
		return time.Time{}
	}
	return time.Unix(0, int64(binary.BigEndian.Uint64(v[8:])))
}

func writeDueCut(tx *bolt.Tx, source string, cycle uint64, cut time.Time) error {
	v := binary.BigEndian.AppendUint64(make([]byte, 0, 16), cycle)
	v = binary.BigEndian.AppendUint64(v, uint64(cut.UnixNano()))
	return tx.Bucket(bucketMeta).Put(dueKey(source), v)
}

func dueKey(source string) []byte { return append(slices.Clip(keyDue), source...) }

// AgedChecksQueued gives, for each source ("" for all) whose URLs the last
// RequeueDue of the current cycle queued for an aged check, its cut: those
// of its URLs that AgedCheckDue still selects by that cut wait for their
// check, while their records read Fetched or Error until it is made.
func (f *Frontier) AgedChecksQueued() (map[string]time.Time, error) {
	out := map[string]time.Time{}
	cycle := f.cycle.Load()
	err := f.view(func(tx *bolt.Tx) error {
		c := tx.Bucket(bucketMeta).Cursor()
		for k, _ := c.Seek(keyDue); k != nil && bytes.HasPrefix(k, keyDue); k, _ = c.Next() {
			source := string(k[len(keyDue):])
			if cut := readDueCut(tx, source, cycle); !cut.IsZero() {
				out[source] = cut
			}
		}
		return nil
	})
	return out, err
}

// Drop marks Excluded, with its verdict's reason, every Waiting URL whose
// verdict refuses it, and takes it out of its queue: a reloaded reject list
// applied to what is queued. Leased URLs are left to their workers.
func (f *Frontier) Drop(verdicts []Verdict) (int, error) {
	refused := make(map[string]string, len(verdicts))
	for _, v := range verdicts {
		if !v.Allowed {
			refused[v.URL] = v.Reason
		}
	}
	if len(refused) == 0 {
		return 0, nil
	}
	return f.drop(func(r Record) (bool, string) {
		reason, ok := refused[r.URL]
		return ok, reason
	})
}

// drop is Drop with the decision made by pred, inside a write
// transaction: it must not call the Frontier.
func (f *Frontier) drop(pred func(Record) (drop bool, reason string)) (int, error) {
	return f.sweep(1<<Waiting, func(w *wtx, key []byte, r *Record, cl *claims, _ *effects) (bool, error) {
		drop, reason := pred(*r)
		if !drop || !cl.take(w, r) {
			return false, nil
		}
		if err := w.dequeue(r); err != nil {
			return false, err
		}
		r.State, r.Reason, r.qseq = Excluded, reason, 0
		if err := w.put(key, r, r.Pending != ""); err != nil {
			return false, err
		}
		return true, w.sweepEvent(key, Event{Kind: EventDropped, Reason: reason})
	})
}
