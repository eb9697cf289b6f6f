package frontier

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// The fixtures were made by the frontier of their format: testdata/store.db
// (format 1: 40 URLs, 10 fetched, histories apart in bucket "e") and
// testdata/store2.db (format 2: 38 URLs on three hosts, two sources, some
// fetched with their documents pending or acknowledged, some in error, a
// temporary failure queued again, refused and excluded ones, groups of
// duplicates, histories beside the records). testdata/store*.view.json is
// what that frontier read from each: every record, each URL's history,
// the counts, the pending writes, the groups, and, per host, the order
// its waiting URLs were leased in.
type storeView struct {
	Recs    []Record
	History map[string][]Event
	Counts  map[string]*SourceCounts
	Pending []string
	Groups  map[string][]Member
	Leases  map[string][]string
}

// viewOf reads f as the fixtures' views were read, leasing and completing
// every waiting URL at the end.
func viewOf(t *testing.T, f *Frontier) storeView {
	t.Helper()
	v := storeView{History: map[string][]Event{}, Groups: map[string][]Member{}, Leases: map[string][]string{}}
	if err := f.ForEach("", func(r Record) error {
		v.Recs = append(v.Recs, r)
		evs, err := f.History(r.URL)
		if err != nil {
			return err
		}
		v.History[r.URL] = evs
		if c, _, err := f.ContentOf(r.URL); err != nil {
			return err
		} else if c != "" {
			m, err := f.SameContent(r.Source, c)
			if err != nil {
				return err
			}
			v.Groups[r.Source+" "+c] = m
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(v.Recs, func(a, b Record) int { return strings.Compare(a.URL, b.URL) })
	var err error
	if v.Counts, err = f.Counts(); err != nil {
		t.Fatal(err)
	}
	p, err := f.Pending()
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range p {
		v.Pending = append(v.Pending, r.URL)
	}
	slices.Sort(v.Pending)
	for {
		l, _, err := f.TryNext()
		if err != nil || l == nil {
			break
		}
		v.Leases[l.HostKey()] = append(v.Leases[l.HostKey()], l.Item().URL)
		mustComplete(t, l, Outcome{State: Fetched, Status: 200})
	}
	return v
}

// sameView compares views as JSON, as the fixtures' were written.
func sameView(t *testing.T, got storeView, wantFile string) {
	t.Helper()
	want, err := os.ReadFile(wantFile)
	if err != nil {
		t.Fatal(err)
	}
	var w storeView
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatal(err)
	}
	g, _ := json.MarshalIndent(got, "", " ")
	ww, _ := json.MarshalIndent(w, "", " ")
	if !bytes.Equal(g, ww) {
		t.Errorf("the store reads differently after the move:\n got %s\nwant %s", g, ww)
	}
}

func copyFixture(t *testing.T, name string) string {
	t.Helper()
	seed, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, storeFile), seed, 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// layoutCheck says what a moved store must hold: format 3, none of the
// older buckets, every record under a key of its host's range, indexed
// by its URL, and nothing else among the records but their events.
func layoutCheck(t *testing.T, f *Frontier) {
	t.Helper()
	err := f.db.View(func(tx *bolt.Tx) error {
		if v := tx.Bucket(bucketMeta).Get(keyFormat); binary.BigEndian.Uint64(v) != 3 {
			t.Errorf("format %x, want 3", v)
		}
		for _, old := range [][]byte{bucketURLsV2, bucketHistory} {
			if tx.Bucket(old) != nil {
				t.Errorf("bucket %q is still there", old)
			}
		}
		x, h := tx.Bucket(bucketIndex), tx.Bucket(bucketHosts)
		records := 0
		err := tx.Bucket(bucketRecords).ForEach(func(k, v []byte) error {
			if isHistoryKey(k) {
				if len(k) != recordKeyLen+historyKeyLen || k[recordKeyLen] != 0 {
					t.Errorf("key %x is neither a record's nor an event's", k)
				}
				return nil
			}
			records++
			var r Record
			if err := decodeRecord(v, &r, true); err != nil {
				return err
			}
			if got := x.Get([]byte(r.URL)); !bytes.Equal(got, k) {
				t.Errorf("%s is indexed under %x, its record is under %x", r.URL, got, k)
			}
			hid := h.Get([]byte(urlnorm.Origin(r.URL)))
			if !bytes.Equal(hid, k[:4]) {
				t.Errorf("%s is under host %x, its host's id is %x", r.URL, k[:4], hid)
			}
			return nil
		})
		if n := x.Stats().KeyN; n != records {
			t.Errorf("%d URLs indexed, %d records", n, records)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A store of format 1 or 2, opened for writing, has its records keyed by
// the order found, with their histories, and reads as it did: the same
// records, events, counts, pending writes and groups, and each host's
// waiting URLs leased in the order they were queued in.
func TestAnOlderStoreIsMovedToTheOrderFoundAndReadsAsItDid(t *testing.T) {
	for _, fx := range []string{"store.db", "store2.db"} {
		t.Run(fx, func(t *testing.T) {
			dir := copyFixture(t, fx)
			f := openTest(t, dir, Options{Policy: policy(100, 0), History: DefaultHistory})
			layoutCheck(t, f)
			sameView(t, viewOf(t, f), filepath.Join("testdata", strings.TrimSuffix(fx, ".db")+".view.json"))
		})
	}
}

// A crash part-way through the move (here after a first chunk of 7
// records, as a process killed after that commit) leaves the rest to the
// next Open, which finishes it with nothing lost or moved twice.
func TestAMoveCutShortIsFinishedByTheNextOpen(t *testing.T) {
	dir := copyFixture(t, "store2.db")
	db, err := bolt.Open(filepath.Join(dir, storeFile), 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &Frontier{db: db, dir: dir}
	if err := f.writeTx(func(tx *bolt.Tx) error {
		for _, name := range allBuckets {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		return tx.Bucket(bucketMeta).Put(keyFormat, binary.BigEndian.AppendUint64(nil, formatVersion))
	}); err != nil {
		t.Fatal(err)
	}
	if more, err := f.moveRecords(7); err != nil || !more {
		t.Fatalf("moveRecords(7) = %v, %v; want more left", more, err)
	}
	var left, moved int
	db.View(func(tx *bolt.Tx) error {
		left = tx.Bucket(bucketURLsV2).Stats().KeyN
		moved = tx.Bucket(bucketIndex).Stats().KeyN
		return nil
	})
	if moved != 7 || left == 0 {
		t.Fatalf("after the first chunk: %d URLs moved, %d keys left; want 7 and some", moved, left)
	}
	db.Close()

	// Read-only, as status would open it now: refused with what to do.
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "first command that writes") {
		t.Errorf("a read-only Open of a half-moved store = %v; want the advice to run a command that writes", err)
	}

	f2 := openTest(t, dir, Options{Policy: policy(100, 0), History: DefaultHistory})
	layoutCheck(t, f2)
	sameView(t, viewOf(t, f2), filepath.Join("testdata", "store2.view.json"))
}

// Status opens a store read-only, and cannot move it: a store of an older
// format is refused with the advice to run a command that writes once,
// and left as it was.
func TestAReadOnlyOpenOfAnOlderStoreSaysHowToMoveIt(t *testing.T) {
	dir := copyFixture(t, "store2.db")
	before, _ := os.ReadFile(filepath.Join(dir, storeFile))
	_, err := Open(dir, Options{ReadOnly: true})
	if err == nil || !strings.Contains(err.Error(), "store format 2 is moved to format 3 by the first command that writes") {
		t.Errorf("read-only Open of a store of format 2 = %v", err)
	}
	after, _ := os.ReadFile(filepath.Join(dir, storeFile))
	if !bytes.Equal(before, after) {
		t.Error("the read-only Open changed the file")
	}
}
