package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Groups of duplicates: the URLs of a source whose pages gave the same
// content key (Outcome.Content), each with the claim its last outcome made
// (Outcome.Claim). A bucket keyed by the group's hash and the URL's
// (LinkKey's, 64 bits each, to stay small beside the records) holds them,
// so that a group is one range of keys, with the claim and the URL as
// value; each URL's record holds its group's content key (Record.content),
// so that an outcome can take the URL out of the group it was in without
// a read of its own. The bucket is created on the first outcome that joins
// a group; a store without it has no groups. Two groups whose (source,
// content) hash alike would read as one: about one chance in ten million at
// a million groups. Format 2 kept each URL's content key in a bucket of its
// own, "D", keyed by the URL's hash: one more leaf at a random place for
// every page that joined or left a group.
var bucketGroups = []byte("d") // group hash | URL hash → claim (uvarint) | URL

// bucketGroupOfV2 is format 2's URL hash → content key (migrateRecords).
var bucketGroupOfV2 = []byte("D")

// maxGroupScan bounds the members one SameContent reads.
const maxGroupScan = 1000

// groupKey is the hash of a group.
func groupKey(source, content string) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 16), LinkKey(source+"\x00"+content))
}

// regroup applies an outcome's membership to the record it completes, in
// the completion's transaction, before the record is stored: a Waiting
// outcome leaves it as it was; any other takes the URL out of its group
// and, Fetched with Content set, puts it in the group of Content with its
// Claim.
func regroup(tx *bolt.Tx, rec *Record, o *Outcome) error {
	if o.State == Waiting {
		return nil
	}
	groups := tx.Bucket(bucketGroups)
	urlKey := urlHash(rec.URL)
	if old := rec.content; old != "" && groups != nil {
		// An unchanged page (a 304) stays where it was: the bucket is
		// keyed by hashes, so rewriting its entry with the same value
		// would dirty a random leaf for nothing.
		if o.State == Fetched && o.Content == old {
			v := groups.Get(append(groupKey(rec.Source, old), urlKey...))
			if claim, w := binary.Uvarint(v); w > 0 && claim == uint64(max(o.Claim, 0)) && string(v[w:]) == rec.URL {
				return nil
			}
		}
		if err := groups.Delete(append(groupKey(rec.Source, old), urlKey...)); err != nil {
			return err
		}
	}
	rec.content = ""
	if o.State != Fetched || o.Content == "" {
		return nil
	}
	var err error
	if groups == nil {
		if groups, err = tx.CreateBucketIfNotExists(bucketGroups); err != nil {
			return err
		}
	}
	g := groupKey(rec.Source, o.Content)
	v := binary.AppendUvarint(make([]byte, 0, len(rec.URL)+2), uint64(max(o.Claim, 0)))
	if err := groups.Put(append(g, urlKey...), append(v, rec.URL...)); err != nil {
		return err
	}
	rec.content = o.Content
	return nil
}

// SameContent lists the group of source with content key content: see
// Duplicates.
func (f *Frontier) SameContent(source, content string) ([]Member, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	var out []Member
	err := f.view(func(tx *bolt.Tx) (err error) {
		out, _, _, err = sameContent(tx, source, content, "")
		return err
	})
	return out, err
}

// sameContent is SameContent in tx, with the URL self listed whatever its
// record's state; claim is self's, found whether self was among the
// members read.
func sameContent(tx *bolt.Tx, source, content, self string) (out []Member, claim int, found bool, err error) {
	groups := tx.Bucket(bucketGroups)
	if groups == nil {
		return nil, 0, false, nil
	}
	prefix := groupKey(source, content)
	c := groups.Cursor()
	n := 0
	for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < maxGroupScan; k, v = c.Next() {
		n++
		m, w := binary.Uvarint(v)
		if w <= 0 {
			return nil, 0, false, errCorrupt
		}
		url := string(v[w:])
		if url == self {
			claim, found = int(m), true
		} else {
			rv, err := getRecord(tx, url)
			if err != nil {
				return nil, 0, false, err
			}
			if rv == nil {
				continue
			}
			var rec Record
			if err := decodeRecord(rv, &rec, false); err != nil {
				return nil, 0, false, err
			}
			if rec.State == Error || rec.State == Excluded {
				continue // left the crawl without an outcome that regrouped it
			}
		}
		out = append(out, Member{URL: url, Claim: int(m)})
	}
	// Keyed by the URLs' hashes, the group reads in their order: put
	// it in the URLs'.
	slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.URL, b.URL) })
	return out, claim, found, nil
}

// ContentOf is the content key of url's group and url's claim in it: see
// Duplicates.
func (f *Frontier) ContentOf(url string) (string, int, error) {
	if f.shut.Load() {
		return "", 0, ErrClosed
	}
	var (
		content string
		claim   int
	)
	err := f.view(func(tx *bolt.Tx) error {
		rec, ok, err := groupedRecord(tx, url)
		if err != nil || !ok {
			return err
		}
		content = rec.content
		claim, err = claimIn(tx.Bucket(bucketGroups), rec.Source, content, urlHash(url))
		return err
	})
	return content, claim, err
}

// groupedRecord is url's record when url is in a group of duplicates.
func groupedRecord(tx *bolt.Tx, url string) (rec Record, ok bool, err error) {
	rv, err := getRecord(tx, url)
	if err != nil || rv == nil || tx.Bucket(bucketGroups) == nil {
		return rec, false, err
	}
	if err := decodeRecord(rv, &rec, true); err != nil {
		return rec, false, err
	}
	return rec, rec.content != "", nil
}

func urlHash(url string) []byte { return binary.BigEndian.AppendUint64(nil, LinkKey(url)) }

// claimIn is the claim of the URL whose hash is urlKey in the group
// (source, content).
func claimIn(groups *bolt.Bucket, source, content string, urlKey []byte) (int, error) {
	v := groups.Get(append(groupKey(source, content), urlKey...))
	n, w := binary.Uvarint(v)
	if w <= 0 {
		return 0, errCorrupt
	}
	return int(n), nil
}

// GroupOf is ContentOf and SameContent in one read: see GroupReader. The
// group's range of keys holds the URL's claim.
func (f *Frontier) GroupOf(rec Record) (content string, claim int, members []Member, err error) {
	if f.shut.Load() {
		return "", 0, nil, ErrClosed
	}
	if rec.content == "" {
		return "", 0, nil, nil
	}
	err = f.view(func(tx *bolt.Tx) error {
		groups := tx.Bucket(bucketGroups)
		if groups == nil {
			return fmt.Errorf("%w: %s is in a group and the store has none", errCorrupt, rec.URL)
		}
		var found bool
		if members, claim, found, err = sameContent(tx, rec.Source, rec.content, rec.URL); err != nil || found {
			return err
		}
		// Past the members read (a group of over maxGroupScan).
		claim, err = claimIn(groups, rec.Source, rec.content, urlHash(rec.URL))
		return err
	})
	if err != nil {
		return "", 0, nil, err
	}
	return rec.content, claim, members, nil
}

// Reclaim makes the changes of rs in one transaction: see
// Duplicates.Reclaim.
func (f *Frontier) Reclaim(rs []Reclaim) ([]error, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	changes := make([]edit, len(rs))
	for i := range rs {
		r := &rs[i]
		changes[i] = edit{URL: r.URL, Events: []Event{r.Event()},
			Fn:    func(rec *Record) error { return reclaimRecord(rec, r) },
			Group: func(tx *bolt.Tx, rec *Record) (error, error) { return reclaimIn(tx, rec, r) }}
	}
	return f.refusals(changes)
}

// reclaimRecord is a Reclaim's change of the URL's record.
func reclaimRecord(rec *Record, r *Reclaim) error {
	switch {
	case rec.State == InFlight:
		return ErrLeased
	case rec.content != r.Content || rec.State == Error || rec.State == Excluded:
		return ErrStale
	case rec.Pending != "" || r.Pending == PendingIndex && !rec.Indexed:
		return ErrUnsettled
	}
	rec.Hash, rec.Pending, rec.DocID = r.Hash, r.Pending, r.DocID
	return nil
}

// reclaimIn is a Reclaim's change of the URL's claim in its group.
func reclaimIn(tx *bolt.Tx, rec *Record, r *Reclaim) (refused, err error) {
	groups := tx.Bucket(bucketGroups)
	if groups == nil {
		return ErrStale, nil
	}
	key := append(groupKey(rec.Source, r.Content), urlHash(rec.URL)...)
	claim, w := binary.Uvarint(groups.Get(key))
	if w <= 0 || claim != uint64(max(r.From, 0)) {
		return ErrStale, nil
	}
	v := binary.AppendUvarint(make([]byte, 0, len(rec.URL)+2), uint64(max(r.To, 0)))
	return nil, groups.Put(key, append(v, rec.URL...))
}
