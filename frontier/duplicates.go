package frontier

import (
	"bytes"
	"encoding/binary"

	bolt "go.etcd.io/bbolt"
)

// Groups of duplicates: the URLs of a source whose pages gave the same
// content key (Outcome.Content), each with the claim its last outcome made
// (Outcome.Claim). Two buckets hold them: the groups, keyed by source, key
// and URL so that a group is one range of keys, and each URL's group, so
// that an outcome can take the URL out of the group it was in. Both are
// created on the first outcome that joins a group; a store without them
// has no groups.
var (
	bucketGroups  = []byte("d") // source 0 content 0 URL → claim (uvarint)
	bucketGroupOf = []byte("D") // URL → source 0 content
)

// maxGroupScan bounds the members one SameContent reads.
const maxGroupScan = 1000

func groupPrefix(source, content string) []byte {
	b := make([]byte, 0, len(source)+len(content)+2)
	b = append(b, source...)
	b = append(b, 0)
	b = append(b, content...)
	return append(b, 0)
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
	key := []byte(rec.URL)
	if of != nil {
		if old := of.Get(key); old != nil {
			if err := groups.Delete(append(append(bytes.Clone(old), 0), key...)); err != nil {
				return err
			}
			if err := of.Delete(key); err != nil {
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
	prefix := groupPrefix(rec.Source, o.Content)
	if err := groups.Put(append(prefix, key...), binary.AppendUvarint(nil, uint64(max(o.Claim, 0)))); err != nil {
		return err
	}
	return of.Put(key, prefix[:len(prefix)-1])
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
		prefix := groupPrefix(source, content)
		c := groups.Cursor()
		n := 0
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && n < maxGroupScan; k, v = c.Next() {
			n++
			url := string(k[len(prefix):])
			var rec Record
			rv := urls.Get(k[len(prefix):])
			if rv == nil {
				continue
			}
			if err := decodeRecord(url, rv, &rec, false); err != nil {
				return err
			}
			if rec.State == Error || rec.State == Excluded {
				continue // left the crawl without an outcome that regrouped it
			}
			claim, _ := binary.Uvarint(v)
			out = append(out, Member{URL: url, Claim: int(claim)})
		}
		return nil
	})
	return out, err
}

// ContentOf is url's group: see Duplicates.
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
		g := of.Get([]byte(url))
		if g == nil {
			return nil
		}
		_, after, ok := bytes.Cut(g, []byte{0})
		if !ok {
			return errCorrupt
		}
		content = string(after)
		c, _ := binary.Uvarint(groups.Get(append(append(bytes.Clone(g), 0), url...)))
		claim = int(c)
		return nil
	})
	return content, claim, err
}
