package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"
)

// Moving an older store to format 3, on its first Open for writing. The
// format is 3 before anything moves (see init), so an older binary never
// reads a half-moved store; each step moves a chunk per transaction, so a
// store of millions of URLs never makes one huge transaction, and a crash
// part-way leaves the rest to the next Open: what was moved is gone from
// where it came from, in the transaction that moved it.

// bucketURLsV2 held the records of formats 1 and 2, keyed by URL, and in
// format 2 each URL's history after its record (URL, a zero byte, the
// sequence).
var bucketURLsV2 = []byte("u")

// bucketHistory held the events of format 1, keyed as in bucketURLsV2.
var bucketHistory = []byte("e")

// migrateChunk is how many events or records a transaction moves.
const migrateChunk = 10000

func (f *Frontier) migrate() error {
	if err := f.migrateHistory(); err != nil {
		if _, ok := err.(*StoreError); !ok {
			err = fmt.Errorf("state store %s: moving the history beside the records: %w", f.dir, err)
		}
		return err
	}
	if err := f.migrateRecords(); err != nil {
		if _, ok := err.(*StoreError); !ok {
			err = fmt.Errorf("state store %s: keying the records by the order found: %w", f.dir, err)
		}
		return err
	}
	return nil
}

// isHistoryKeyV2 says whether a key of bucketURLsV2 is an event's.
func isHistoryKeyV2(k []byte) bool {
	return len(k) > historyKeyLen && k[len(k)-historyKeyLen] == 0
}

// migrateHistory moves the events of a store of format 1 from bucket "e"
// to beside their records in bucketURLsV2, under the same keys, as format
// 2 had them; migrateRecords then moves both.
func (f *Frontier) migrateHistory() error {
	for {
		more := false
		err := f.writeTx(func(tx *bolt.Tx) error {
			e, u := tx.Bucket(bucketHistory), tx.Bucket(bucketURLsV2)
			if e == nil {
				return nil
			}
			if u == nil {
				// No records to put them beside.
				return tx.DeleteBucket(bucketHistory)
			}
			var moved [][]byte
			c := e.Cursor()
			for k, v := c.First(); k != nil; k, v = c.Next() {
				if len(moved) == migrateChunk {
					more = true
					break
				}
				// bbolt keeps what Put is given until the commit:
				// copies, not slices of the mapped file.
				k = bytes.Clone(k)
				moved = append(moved, k)
				// Bucket "e" never held anything else: a key that is
				// no event's is damage, and would read as a record
				// among the records. It is dropped.
				if !isHistoryKeyV2(k) {
					continue
				}
				if err := u.Put(k, bytes.Clone(v)); err != nil {
					return err
				}
			}
			for _, k := range moved {
				if err := e.Delete(k); err != nil {
					return err
				}
			}
			if !more {
				return tx.DeleteBucket(bucketHistory)
			}
			return nil
		})
		if err := f.check(err); err != nil || !more {
			return err
		}
	}
}

// migrateRecords moves the records of bucketURLsV2, with their events, to
// keys in the order found (in URL order, for what the store held: the
// order they were found in is not kept), indexes their URLs, points their
// queue entries and pending writes at the new keys, and takes each one's
// group from bucketGroupOfV2 into the record. A queue entry no Waiting
// record holds is left as it was, naming a URL: the scheduler finds no
// record under it and deletes it as stale.
func (f *Frontier) migrateRecords() error {
	for {
		more, err := f.moveRecords(migrateChunk)
		if err != nil || !more {
			return err
		}
	}
}

// moveRecords moves up to chunk records in one transaction; more says
// some are left.
func (f *Frontier) moveRecords(chunk int) (more bool, _ error) {
	err := f.writeTx(func(tx *bolt.Tx) error {
		old := tx.Bucket(bucketURLsV2)
		if old == nil {
			return nil
		}
		w := newWtx(tx)
		of := tx.Bucket(bucketGroupOfV2)
		var (
			moved   [][]byte
			prefix  []byte // the events of the record last moved: its URL, a zero byte
			key     []byte // its new key
			records int
			rec     Record
		)
		c := old.Cursor()
		for k, v := c.First(); k != nil; k, v = c.Next() {
			if isHistoryKeyV2(k) {
				moved = append(moved, bytes.Clone(k))
				// An event of no record is dropped.
				if prefix != nil && len(k) == len(prefix)+4 && bytes.HasPrefix(k, prefix) {
					n := len(w.arena)
					w.arena = append(append(w.arena, key...), k[len(prefix)-1:]...)
					if err := w.u.Put(w.arena[n:len(w.arena):len(w.arena)], bytes.Clone(v)); err != nil {
						return err
					}
				}
				continue
			}
			if records == chunk {
				more = true
				break
			}
			records++
			moved = append(moved, bytes.Clone(k))
			url := string(k)
			if err := decodeRecordV1(url, v, &rec); err != nil {
				return fmt.Errorf("%w: %s", err, url)
			}
			if of != nil {
				rec.content = string(of.Get(urlHash(url)))
			}
			var err error
			if key, err = w.newKey(url); err != nil {
				return err
			}
			prefix = append(append(prefix[:0], k...), 0)
			if err := w.put(key, &rec, false); err != nil {
				return err
			}
			if rec.Pending != "" {
				if err := w.p.Delete(k); err != nil {
					return err
				}
			}
			if rec.State == Waiting {
				// Its entry, or a new one where it should be: a
				// Waiting record is in its queue, under the host id
				// its key begins with.
				n := len(w.arena)
				w.arena = putQKey(w.arena, binary.BigEndian.Uint32(key), level(rec.Class, rec.Shift), rec.qseq)
				if err := w.q.Put(w.arena[n:len(w.arena):len(w.arena)], key); err != nil {
					return err
				}
			}
		}
		for _, k := range moved {
			if err := old.Delete(k); err != nil {
				return err
			}
		}
		if more {
			return nil
		}
		if of != nil {
			if err := tx.DeleteBucket(bucketGroupOfV2); err != nil {
				return err
			}
		}
		return tx.DeleteBucket(bucketURLsV2)
	})
	return more, f.check(err)
}
