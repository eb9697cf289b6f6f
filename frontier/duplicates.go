package frontier

import (
	"bytes"
	"encoding/binary"
	"slices"
	"strings"

	bolt "go.etcd.io/bbolt"
)

// Groups of duplicates: the URLs of a source whose pages gave the same
// content key (Outcome.Content), each with the claim its last outcome made
// (Outcome.Claim). Two buckets hold them, keyed by 64-bit hashes (LinkKey's)
// to stay small beside the records: the groups, keyed by the group's hash
// and the URL's, so that a group is one range of keys, with the claim and
// the URL as value; and each URL's content key, so that an outcome can
// take the URL out of the group it was in. Both are created on the first outcome
// that joins a group; a store without them has no groups. Two groups
// whose (source, content) hash alike would read as one: about one chance
// in ten million at a million groups.
var (
	bucketGroups  = []byte("d") // group hash | URL hash → claim (uvarint) | URL
	bucketGroupOf = []byte("D") // URL hash → content key
)

// maxGroupScan bounds the members one SameContent reads.
const maxGroupScan = 1000

// groupKey is the hash of a group.
func groupKey(source, content string) []byte {
	return binary.BigEndian.AppendUint64(make([]byte, 0, 16), LinkKey(source+"\x00"+content))
}

// regroup applies an outcome's membership to the record it completes, in
// the completion's transaction: a Waiting outcome leaves it as it was;
// any other takes the URL out of its group and, Fetched with Content set,
// puts it in the group of Content with its Claim.
func regroup(tx *bolt.Tx, rec *Record, o *Outcome) error {
	if o.State == Waiting {
		return nil
	}
	of, groups := tx.Bucket(bucketGroupOf), tx.Bucket(bucketGroups)
	urlKey := binary.BigEndian.AppendUint64(nil, LinkKey(rec.URL))
	if of != nil {
		if old := of.Get(urlKey); old != nil {
			// An unchanged page (a 304) stays where it was: both buckets
			// are keyed by hashes, so rewriting its entries with the same
			// values would dirty two random leaves for nothing.
			if o.State == Fetched && o.Content == string(old) {
				gk := append(groupKey(rec.Source, o.Content), urlKey...)
				v := groups.Get(gk)
				if claim, w := binary.Uvarint(v); w > 0 && claim == uint64(max(o.Claim, 0)) && string(v[w:]) == rec.URL {
					return nil
				}
			}
			if err := groups.Delete(append(groupKey(rec.Source, string(old)), urlKey...)); err != nil {
				return err
			}
			if err := of.Delete(urlKey); err != nil {
				return err
			}
		}
	}
	if o.State != Fetched || o.Content == "" {
		return nil
	}
	var err error
	if of == nil {
		if of, err = tx.CreateBucketIfNotExists(bucketGroupOf); err != nil {
			return err
		}
		if groups, err = tx.CreateBucketIfNotExists(bucketGroups); err != nil {
			return err
		}
	}
	g := groupKey(rec.Source, o.Content)
	v := binary.AppendUvarint(make([]byte, 0, len(rec.URL)+2), uint64(max(o.Claim, 0)))
	if err := groups.Put(append(g, urlKey...), append(v, rec.URL...)); err != nil {
		return err
	}
	return of.Put(urlKey, []byte(o.Content))
}

// SameContent lists the group of source with content key content: see
// Duplicates.
func (f *Frontier) SameContent(source, content string) ([]Member, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	var out []Member
	err := f.view(func(tx *bolt.Tx) error {
		groups, urls := tx.Bucket(bucketGroups), tx.Bucket(bucketURLs)
		if groups == nil {
			return nil
		}
		prefix := groupKey(source, content)
		c := groups.Cursor()
		n := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < maxGroupScan; k, v = c.Next() {
			n++
			claim, w := binary.Uvarint(v)
			if w <= 0 {
				return errCorrupt
			}
			url := string(v[w:])
			rv := urls.Get(v[w:])
			if rv == nil {
				continue
			}
			var rec Record
			if err := decodeRecord(url, rv, &rec, false); err != nil {
				return err
			}
			if rec.State == Error || rec.State == Excluded {
				continue // left the crawl without an outcome that regrouped it
			}
			out = append(out, Member{URL: url, Claim: int(claim)})
		}
		// Keyed by the URLs' hashes, the group reads in their order: put
		// it in the URLs'.
		slices.SortFunc(out, func(a, b Member) int { return strings.Compare(a.URL, b.URL) })
		return nil
	})
	return out, err
}

// ContentOf is url's group: see Duplicates. source is url's record's.
func (f *Frontier) ContentOf(url string) (string, int, error) {
	if f.shut.Load() {
		return "", 0, ErrClosed
	}
	var (
		content string
		claim   int
	)
	err := f.view(func(tx *bolt.Tx) error {
		of, groups := tx.Bucket(bucketGroupOf), tx.Bucket(bucketGroups)
		if of == nil {
			return nil
		}
		urlKey := binary.BigEndian.AppendUint64(nil, LinkKey(url))
		c := of.Get(urlKey)
		if c == nil {
			return nil
		}
		rv := tx.Bucket(bucketURLs).Get([]byte(url))
		if rv == nil {
			return nil
		}
		var rec Record
		if err := decodeRecord(url, rv, &rec, true); err != nil {
			return err
		}
		v := groups.Get(append(groupKey(rec.Source, string(c)), urlKey...))
		n, w := binary.Uvarint(v)
		if w <= 0 {
			return errCorrupt
		}
		content, claim = string(c), int(n)
		return nil
	})
	return content, claim, err
}
