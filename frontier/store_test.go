package frontier

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/internal/tmpfs"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// storeLayout is where things are in a store file, read while it is open.
type storeLayout struct {
	pageSize int64
	pages    int64  // the high-water mark: pages in use
	urlsRoot uint64 // root page of the URL bucket
}

func layoutOf(t *testing.T, f *Frontier) storeLayout {
	t.Helper()
	var l storeLayout
	err := f.db.View(func(tx *bolt.Tx) error {
		l.pageSize = int64(f.db.Info().PageSize)
		l.pages = tx.Size() / l.pageSize
		l.urlsRoot = uint64(tx.Bucket(bucketRecords).Root())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if l.urlsRoot == 0 {
		t.Fatal("the URL bucket is inline: the test store is too small")
	}
	return l
}

// filledStore makes a store of n URLs with their histories, the first 50
// fetched, and returns its directory and layout, closed.
func filledStore(t *testing.T, n int) (string, storeLayout) {
	t.Helper()
	dir := t.TempDir()
	f, err := Open(dir, Options{Policy: policy(1000, 0), History: DefaultHistory})
	if err != nil {
		t.Fatal(err)
	}
	mustAdd(t, f, urlsOf("a.example", n)...)
	for range 50 {
		mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Hash: "h"})
	}
	l := layoutOf(t, f)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, l
}

// overwrite writes b at page id of the store file in dir.
func overwrite(t *testing.T, dir string, l storeLayout, id uint64, b []byte) {
	t.Helper()
	fh, err := os.OpenFile(filepath.Join(dir, storeFile), os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(b, int64(id)*l.pageSize); err != nil {
		t.Fatal(err)
	}
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

func wantCorrupt(t *testing.T, err error, dir string) {
	t.Helper()
	var se *StoreError
	if !errors.As(err, &se) || !se.Corrupt {
		t.Fatalf("error = %v, want a corrupt *StoreError", err)
	}
	if want := "state store " + dir + " is corrupt: restore it or remove it to start over"; !strings.Contains(err.Error(), want) {
		t.Errorf("error = %q, want it to say %q", err, want)
	}
}

func TestOpenRefusesADamagedStoreAndNeverTakesItForANewOne(t *testing.T) {
	good, l := filledStore(t, 3000)
	original, err := os.ReadFile(filepath.Join(good, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	// A branch page whose first child is itself: bbolt's own walk on open
	// would recurse until the stack overflows, which no recover catches.
	loop := func(t *testing.T, dir string) {
		root := original[int64(l.urlsRoot)*l.pageSize:][:l.pageSize]
		if binary.LittleEndian.Uint16(root[8:]) != flagBranch {
			t.Fatal("the URL bucket's root is not a branch page")
		}
		page := bytes.Clone(root)
		binary.LittleEndian.PutUint64(page[pageHeaderSize+8:], l.urlsRoot)
		overwrite(t, dir, l, l.urlsRoot, page)
	}
	for _, c := range []struct {
		name   string
		damage func(t *testing.T, dir string)
		says   string
	}{
		{"emptied to zero bytes", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, storeFile), 0)
		}, "the file is empty"},
		{"truncated to half its pages", func(t *testing.T, dir string) {
			os.Truncate(filepath.Join(dir, storeFile), l.pages*l.pageSize/2)
		}, "truncated"},
		{"random bytes over a data page", func(t *testing.T, dir string) {
			overwrite(t, dir, l, l.urlsRoot, randomBytes(int(l.pageSize)))
		}, fmt.Sprintf("page %d", l.urlsRoot)},
		{"garbage over both meta pages", func(t *testing.T, dir string) {
			overwrite(t, dir, l, 0, randomBytes(2*int(l.pageSize)))
		}, "neither meta page is valid"},
		{"a branch page that leads back to itself", loop, "reached twice"},
		{"keys out of order in a leaf", func(t *testing.T, dir string) {
			// The first leaf: down the first child of each branch.
			leafID := l.urlsRoot
			for {
				page := original[int64(leafID)*l.pageSize:][:l.pageSize]
				if binary.LittleEndian.Uint16(page[8:]) != flagBranch {
					break
				}
				leafID = binary.LittleEndian.Uint64(page[pageHeaderSize+8:])
			}
			leaf := bytes.Clone(original[int64(leafID)*l.pageSize:][:l.pageSize])
			pos := int(binary.LittleEndian.Uint32(leaf[pageHeaderSize+4:]))
			leaf[pageHeaderSize+pos] = '~' // the first key now sorts after the others
			overwrite(t, dir, l, leafID, leaf)
		}, "out of order"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, storeFile)
			if err := os.WriteFile(path, original, 0o600); err != nil {
				t.Fatal(err)
			}
			c.damage(t, dir)
			damagedBytes, _ := os.ReadFile(path)
			for _, ro := range []bool{false, true} {
				f, err := Open(dir, Options{ReadOnly: ro})
				if err == nil {
					f.Close()
				}
				wantCorrupt(t, err, dir)
				if !strings.Contains(err.Error(), c.says) {
					t.Errorf("error %q does not say what is wrong (%q)", err, c.says)
				}
			}
			if now, _ := os.ReadFile(path); !bytes.Equal(now, damagedBytes) {
				t.Errorf("Open changed the damaged file (%d bytes, were %d): it must be left for a restore", len(now), len(damagedBytes))
			}
		})
	}
}

func TestOneGarbageMetaPageFallsBackToTheOtherAsAfterATornWrite(t *testing.T) {
	dir, l := filledStore(t, 3000)
	overwrite(t, dir, l, 0, randomBytes(int(l.pageSize)))
	f := openTest(t, dir, Options{Policy: policy(1000, 0)})
	// One transaction at most is lost: the URLs added long before are all there.
	got := 0
	if err := f.ForEach("", func(Record) error { got++; return nil }); err != nil {
		t.Fatal(err)
	}
	if got != 3000 {
		t.Errorf("%d URLs after falling back to the other meta page, want 3000", got)
	}
}

func TestAStoreDamagedWhileOpenStopsWithTheCorruptErrorAndNoPanic(t *testing.T) {
	dir := t.TempDir()
	f := openTest(t, dir, Options{Policy: policy(1000, 0), History: DefaultHistory})
	mustAdd(t, f, urlsOf("a.example", 3000)...)
	l := mustLease(t, f)
	lay := layoutOf(t, f)
	// Every page but the meta pages, as bit rot or another writer might.
	for id := uint64(2); id < uint64(lay.pages); id++ {
		overwrite(t, dir, lay, id, randomBytes(int(lay.pageSize)))
	}
	// The committer reads the damaged pages first: the outcome fails, the
	// store is broken, and nothing crashed.
	err := l.Complete(Outcome{State: Fetched, Status: 200})
	wantCorrupt(t, err, dir)
	if _, err := f.next(context.Background()); err == nil || err.Error() != f.failure().Error() {
		t.Errorf("Next = %v, want the store's error %v", err, f.failure())
	}
	if _, err := f.Add(Item{URL: "http://b.example/", Source: "s", Class: Start}); !errors.Is(err, f.failure()) {
		t.Errorf("Add after the damage = %v, want the store's error", err)
	}
	if _, _, err := f.Get("http://a.example/p/7"); err == nil {
		t.Error("Get of a damaged page gave no error")
	}
	if err := f.ForEach("", func(Record) error { return nil }); err == nil {
		t.Error("ForEach over damaged pages gave no error")
	}
	// The damaged transaction was left open (see writeTx), so this process
	// keeps the file locked: a copy shows what the next start finds.
	f.Close()
	b, err := os.ReadFile(filepath.Join(dir, storeFile))
	if err != nil {
		t.Fatal(err)
	}
	next := t.TempDir()
	if err := os.WriteFile(filepath.Join(next, storeFile), b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = Open(next, Options{})
	wantCorrupt(t, err, next)
}

func TestAReadErrorOfADamagedPageAlsoBreaksTheStore(t *testing.T) {
	dir := t.TempDir()
	f := openTest(t, dir, Options{Policy: policy(1000, 0)})
	mustAdd(t, f, urlsOf("a.example", 3000)...)
	lay := layoutOf(t, f)
	for id := uint64(2); id < uint64(lay.pages); id++ {
		overwrite(t, dir, lay, id, randomBytes(int(lay.pageSize)))
	}
	// The first to meet the damage is a lease: Next reports it, as does every later change.
	_, err := f.next(context.Background())
	wantCorrupt(t, err, dir)
	if err := f.PutMeta("k", []byte("v")); !errors.Is(err, f.failure()) {
		t.Errorf("PutMeta after the damage = %v, want the store's error", err)
	}
}

func TestAFullDiskBreaksTheStoreWithENOSPCAndLosesNothingCommitted(t *testing.T) {
	dir := tmpfs.Mount(t, 512<<10)
	// bbolt maps the file with a 1 GiB initial mapping: on a 512 KiB tmpfs
	// the open must work, and the failure be the write.
	f, err := Open(dir, Options{Policy: policy(1000, 0), History: DefaultHistory})
	if err != nil {
		t.Fatalf("open on a small tmpfs: %v", err)
	}
	defer f.Close()
	var added []Item
	for b := 0; ; b++ {
		items := urlsOf(fmt.Sprintf("h%d.example", b), 100)
		if _, err = f.Add(items...); err != nil {
			break
		}
		added = append(added, items...)
		if b > 10000 {
			t.Fatal("a 512 KiB file system never filled up")
		}
	}
	var se *StoreError
	if !errors.As(err, &se) || se.Corrupt || !errors.Is(err, syscall.ENOSPC) || !strings.Contains(err.Error(), "state store "+dir) {
		t.Fatalf("Add on a full disk = %v, want a *StoreError naming the state store and ENOSPC", err)
	}
	if len(added) == 0 {
		t.Fatal("nothing was stored before the disk was full")
	}
	if _, err := f.next(context.Background()); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Next on a broken store = %v, want the ENOSPC error", err)
	}
	if _, err := f.Add(urlsOf("late.example", 1)...); !errors.Is(err, syscall.ENOSPC) {
		t.Errorf("Add after the failure = %v, want the same error at once", err)
	}
	if _, ok, err := f.Get(added[0].URL); err != nil || !ok {
		t.Errorf("Get of a stored URL after the failure = %v, %v; reading still works", ok, err)
	}
	if err := f.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	// Every acknowledged Add is there after a reopen.
	g := openTest(t, dir, Options{Policy: policy(1000, 0)})
	n := 0
	g.ForEach("", func(Record) error { n++; return nil })
	if n != len(added) {
		t.Errorf("%d URLs after reopening, want the %d acknowledged", n, len(added))
	}
}

func TestReadOnlyOpenReadsAndRefusesEveryChange(t *testing.T) {
	dir, _ := filledStore(t, 3000)
	f := openTest(t, dir, Options{ReadOnly: true})
	if r := mustGet(t, f, "http://a.example/p/0"); r.State != Fetched {
		t.Errorf("read-only Get = %s, want fetched", r.State)
	}
	if _, err := f.Add(urlsOf("b.example", 1)...); !errors.Is(err, errReadOnly) {
		t.Errorf("read-only Add = %v, want errReadOnly", err)
	}
	if _, err := Open(filepath.Join(t.TempDir(), "none"), Options{ReadOnly: true}); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("read-only Open of a missing store = %v, want ErrNotExist", err)
	}
}

func TestAStoreOnAReadOnlyFileSystemOpensReadOnlyAndSaysWhyItCannotWrite(t *testing.T) {
	dir := tmpfs.Mount(t, 32<<20)
	f := openTest(t, dir, Options{})
	mustAdd(t, f, urlsOf("a.example", 10)...)
	f.Close()
	tmpfs.ReadOnly(t, dir)
	if _, err := Open(dir, Options{}); err == nil || !strings.Contains(err.Error(), "state store "+dir+" cannot be written") ||
		!errors.Is(err, syscall.EROFS) {
		t.Errorf("Open of a read-only store = %v, want it to say it cannot be written, and why", err)
	}
	g := openTest(t, dir, Options{ReadOnly: true})
	if r := mustGet(t, g, "http://a.example/p/3"); r.State != Waiting {
		t.Errorf("read-only Get = %s", r.State)
	}
}

func TestAStoreInUseIsSaidToBeInUse(t *testing.T) {
	dir := t.TempDir()
	openTest(t, dir, Options{})
	if _, err := Open(dir, Options{ReadOnly: true}); err == nil || !strings.Contains(err.Error(), "in use by another process") {
		t.Errorf("Open of a store another Frontier holds = %v, want in use", err)
	}
}

func TestANewStoreAppearsWhole(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "state")
	if err := openTest(t, dir, Options{}).Close(); err != nil {
		t.Fatal(err)
	}
	names, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0].Name() != storeFile {
		t.Errorf("state dir holds %v, want only %s (no temporary file left)", names, storeFile)
	}
	if err := verifyStore(filepath.Join(dir, storeFile), true, time.Second); err != nil {
		t.Errorf("a new store fails verification: %v", err)
	}
}

func TestAnOutcomeThatCannotBeRecordedHoldsTheURLUntilTheNextCycle(t *testing.T) {
	for _, async := range []bool{false, true} {
		t.Run(fmt.Sprintf("async=%v", async), func(t *testing.T) {
			f := openTest(t, "", Options{Policy: policy(1, 0)})
			mustAdd(t, f, Item{URL: "http://a.example/", Source: "s", Class: Start})
			l := mustLease(t, f)
			// A link the store cannot hold: the outcome is refused before any write.
			long := "http://a.example/" + strings.Repeat("x", urlnorm.MaxLength)
			o := Outcome{State: Fetched, Status: 200, Found: &Found{Links: []Item{{URL: long, Source: "s", Class: IndexFollow}}}}
			var err error
			if async {
				err = l.CompleteAsync(o, func(error) { t.Error("done called for a refused outcome") })
			} else {
				err = l.Complete(o)
			}
			if err == nil {
				t.Fatal("an outcome with a link longer than urlnorm.MaxLength was accepted")
			}
			l.Release() // a no-op: the lease ended with the refusal
			if l, err := f.next(context.Background()); !errors.Is(err, ErrDone) {
				t.Fatalf("Next after a refused outcome = %v, %v; want ErrDone, not the URL again", l, err)
			}
			if r := mustGet(t, f, "http://a.example/"); r.State != Waiting {
				t.Errorf("the URL is %s on disk, want waiting for the next cycle", r.State)
			}
			if _, err := f.BeginCycle(); err != nil {
				t.Fatal(err)
			}
			if l := mustLease(t, f); l.Item().URL != "http://a.example/" {
				t.Errorf("leased %s in the next cycle, want the held URL", l.Item().URL)
			}
		})
	}
}

func TestTheLongestURLTheStoreHoldsIsStoredWithItsHistory(t *testing.T) {
	dir := t.TempDir()
	f := openTest(t, dir, Options{Policy: policy(1, 0), History: DefaultHistory})
	u := "http://a.example/"
	u += strings.Repeat("x", urlnorm.MaxLength-len(u))
	mustAdd(t, f, Item{URL: u, Source: "s", Class: Start})
	mustComplete(t, mustLease(t, f), Outcome{State: Fetched, Status: 200, Detail: "ok"})
	// Its keys fill overflow pages, which the check at Open walks too.
	f.Close()
	f = openTest(t, dir, Options{Policy: policy(1, 0), History: DefaultHistory})
	evs, err := f.History(u)
	if err != nil || len(evs) != 2 {
		t.Errorf("history of a URL of urlnorm.MaxLength bytes = %v, %v; want queued and fetched", evs, err)
	}
	if _, err := f.Add(Item{URL: u + "y", Source: "s", Class: Start}); err == nil {
		t.Error("Add took a URL longer than urlnorm.MaxLength")
	}
	if urlnorm.MaxLength+5 > bolt.MaxKeySize {
		t.Errorf("urlnorm.MaxLength %d leaves no room for a history key within bbolt's %d", urlnorm.MaxLength, bolt.MaxKeySize)
	}
}

// FuzzOpenOfADamagedFileNeverCrashes writes bytes over a store file (and
// may cut it short), opens it and reads all of it: whatever the check at
// Open lets through, bbolt must read and write without a panic or a fault,
// and what the check refuses must be the corrupt error. A crash here
// (bbolt's own goroutines cannot be recovered) is a hole in verifyFile.
// testdata/store.db is a small store (40 URLs, 10 fetched, with histories
// and outlinks) made once by this package: a store made at each run would
// differ (bbolt spills buckets in map order), and a crasher not reproduce.
func FuzzOpenOfADamagedFileNeverCrashes(f *testing.F) {
	seed, err := os.ReadFile(filepath.Join("testdata", "store.db"))
	if err != nil {
		f.Fatal(err)
	}
	// A small mapping keeps a grown file small; the array freelist
	// allocates pages in the same order every run.
	small := &bolt.Options{Timeout: time.Second, FreelistType: bolt.FreelistArrayType, NoFreelistSync: true}
	opt := Options{Policy: policy(100, 0), History: DefaultHistory, Bolt: small, Now: newClock().Now}
	f.Add(uint32(0), []byte{}, uint32(0))
	f.Add(uint32(2*4096+8), []byte{1, 1}, uint32(0))        // a page's type
	f.Add(uint32(3*4096+16), []byte{0xff, 0xff}, uint32(0)) // an element's position
	f.Add(uint32(0), []byte{}, uint32(5*4096))              // truncated
	f.Fuzz(func(t *testing.T, at uint32, patch []byte, cut uint32) {
		b := bytes.Clone(seed)
		copy(b[int(at)%len(b):], patch)
		if cut > 0 {
			b = b[:int(cut)%len(b)]
		}
		dir := t.TempDir()
		if err := os.WriteFile(filepath.Join(dir, storeFile), b, 0o600); err != nil {
			t.Fatal(err)
		}
		fr, err := Open(dir, opt)
		if err != nil {
			var se *StoreError
			if !errors.As(err, &se) || !se.Corrupt {
				t.Fatalf("Open = %v, want a corrupt StoreError or none", err)
			}
			return
		}
		defer fr.Close()
		fr.ForEach("", func(r Record) error {
			fr.History(r.URL)
			return nil
		})
		if l, _, _ := fr.TryNext(); l != nil {
			l.Complete(Outcome{State: Fetched, Status: 200})
		}
		fr.Reach([]uint64{1})
	})
}
