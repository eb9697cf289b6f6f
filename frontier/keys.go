package frontier

import (
	"encoding/binary"
	"fmt"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// Records are keyed by the order their URLs were found in, per host: the
// host's id (4 bytes) and a store-wide sequence (8), big-endian. A page is
// found, leased, completed and acknowledged in about the order of its
// neighbours in its host's queue, so the writes of a commit's pages land
// on leaves they share; keyed by URL, each page rewrote leaves its URL
// chose at random, and at a million pages no two pages of a commit shared
// one (docs/frontier.md, "Records in the order found"). Bucket "x" maps
// each URL to its key: written once, when the URL is first stored.
const recordKeyLen = 12

var (
	bucketRecords = []byte("r") // record key → record, and its history after it
	bucketIndex   = []byte("x") // URL → record key
)

// lookup finds url's record: its key (cut from the arena, valid until the
// commit) and its value; nil, nil when the store does not know url.
func (w *wtx) lookup(url string) (key, v []byte, err error) {
	// Get keeps nothing of the key it is given: no arena needed.
	w.scratch = append(w.scratch[:0], url...)
	k, err := indexEntry(w.x.Get(w.scratch), url)
	if err != nil || k == nil {
		return nil, nil, err
	}
	n := len(w.arena)
	w.arena = append(w.arena, k...)
	key = w.arena[n:len(w.arena):len(w.arena)]
	return key, w.u.Get(key), nil
}

// newKey makes the key of url's first record, in its host's range, and
// indexes url under it.
func (w *wtx) newKey(url string) ([]byte, error) {
	id, _, err := w.hostID(urlnorm.Origin(url), true)
	if err != nil {
		return nil, err
	}
	seq, err := w.u.NextSequence()
	if err != nil {
		return nil, err
	}
	n := len(w.arena)
	w.arena = binary.BigEndian.AppendUint64(binary.BigEndian.AppendUint32(w.arena, id), seq)
	key := w.arena[n:len(w.arena):len(w.arena)]
	if err := w.x.Put(w.bytes(url), key); err != nil {
		return nil, err
	}
	return key, nil
}

// getRecord is url's record in a read transaction, nil when unknown.
func getRecord(tx *bolt.Tx, url string) ([]byte, error) {
	k, err := indexEntry(tx.Bucket(bucketIndex).Get([]byte(url)), url)
	if err != nil || k == nil {
		return nil, err
	}
	return tx.Bucket(bucketRecords).Get(k), nil
}

// indexEntry is the record key url's index entry k holds, nil when url is
// not indexed: an entry of another length is a damaged store, not an
// unknown URL, which Add would store twice.
func indexEntry(k []byte, url string) ([]byte, error) {
	if k != nil && len(k) != recordKeyLen {
		return nil, fmt.Errorf("%w: index entry %x of %s", errCorrupt, k, url)
	}
	return k, nil
}
