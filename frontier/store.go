package frontier

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"syscall"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// StoreError is a failure of the state store itself rather than of one
// change: it is corrupt, or it cannot write (a full disk, an I/O error).
// From the first one on, a Frontier records nothing more: every change and
// Next return it, so a crawl stops instead of fetching what it can no
// longer record. It names the state directory; Unwrap gives the cause
// (syscall.ENOSPC for a full disk).
type StoreError struct {
	Dir     string
	Corrupt bool
	Err     error
}

func (e *StoreError) Error() string {
	if e.Corrupt {
		return fmt.Sprintf("state store %s is corrupt: restore it or remove it to start over (%v)", e.Dir, e.Err)
	}
	return fmt.Sprintf("state store %s cannot record changes: %v", e.Dir, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

// errReadOnly is returned by every change of a Frontier opened with
// Options.ReadOnly.
var errReadOnly = errors.New("frontier: the state store is open read-only")

// storeFile is the store's file name under the state directory.
const storeFile = "frontier.db"

// openDB opens (or creates) the store file in dir after checking it, so a
// damaged file is a StoreError rather than a panic or a SIGBUS.
func openDB(dir string, opt Options) (*bolt.DB, error) {
	bo := DefaultBoltOptions()
	if opt.Bolt != nil {
		bo = opt.Bolt
	}
	if opt.ReadOnly {
		ro := *bo
		ro.ReadOnly = true
		bo = &ro
	}
	path := filepath.Join(dir, storeFile)
	_, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) && !opt.ReadOnly {
		err = create(dir, path, bo)
	}
	if err == nil {
		err = verifyStore(path, !opt.ReadOnly, bo.Timeout)
	}
	var db *bolt.DB
	if err == nil {
		db, err = boltOpen(path, bo)
	}
	switch {
	case err == nil:
		return db, nil
	case errors.Is(err, errDamaged), errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum),
		errors.Is(err, berrors.ErrVersionMismatch):
		return nil, &StoreError{Dir: dir, Corrupt: true, Err: err}
	case errors.Is(err, berrors.ErrTimeout):
		return nil, fmt.Errorf("state store %s is in use by another process (a running crawl or service holds it)", dir)
	case errors.Is(err, syscall.EROFS), errors.Is(err, fs.ErrPermission):
		return nil, fmt.Errorf("state store %s cannot be written: %w", dir, err)
	case errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("state store %s holds no store yet (no crawl has run): %w", dir, err)
	}
	return nil, fmt.Errorf("state store %s: %w", dir, err)
}

// create makes a new, empty store at path that appears whole or not at
// all: it is initialised under a temporary name and linked into place, so
// a crash while creating it never leaves an empty frontier.db, which Open
// would refuse as damaged rather than take for a new crawl.
func create(dir, path string, bo *bolt.Options) error {
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(dir, storeFile+".new-*")
	if err != nil {
		return err
	}
	name := tmp.Name()
	tmp.Close()
	defer os.Remove(name)
	db, err := bolt.Open(name, 0o600, bo) // writes and syncs the first pages
	if err != nil {
		return err
	}
	if err := db.Close(); err != nil {
		return err
	}
	if err := os.Link(name, path); err != nil && !errors.Is(err, fs.ErrExist) {
		return err // ErrExist: another process created it meanwhile
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// boltOpen is bolt.Open with its panics on a damaged file turned into
// errors (verifyFile catches what it knows of first).
func boltOpen(path string, bo *bolt.Options) (db *bolt.DB, err error) {
	err = guard(func() error {
		db, err = bolt.Open(path, 0o600, bo)
		return err
	})
	return db, err
}

// guard runs fn, turning a panic of bbolt on a damaged page, or a fault
// reading the mapped file (a SIGBUS past the end of a truncated one), into
// an errDamaged error, so that no read or write of a corrupt store crashes
// the process.
func guard(fn func() error) (err error) {
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damaged("%v", r)
		}
	}()
	return fn()
}

// view runs fn in a read transaction, guarded.
func (f *Frontier) view(fn func(*bolt.Tx) error) error {
	if f.shut.Load() {
		return ErrClosed
	}
	return f.check(guard(func() error { return f.db.View(fn) }))
}

// check returns err, first marking the store broken when err says it is
// damaged.
func (f *Frontier) check(err error) error {
	if err != nil && (errors.Is(err, errDamaged) || errors.Is(err, errCorrupt)) {
		return f.fail(err, true)
	}
	return err
}

// fail marks the store broken, if it was not yet, and returns err as a
// StoreError: nothing more is written, and Next reports it.
func (f *Frontier) fail(err error, corrupt bool) error {
	var se *StoreError
	if !errors.As(err, &se) {
		se = &StoreError{Dir: f.dir, Corrupt: corrupt, Err: err}
	}
	if f.broken.CompareAndSwap(nil, se) {
		close(f.brokenCh)
	}
	return se
}

// failure is the StoreError that broke the store, or nil.
func (f *Frontier) failure() error {
	if se := f.broken.Load(); se != nil {
		return se
	}
	return nil
}
