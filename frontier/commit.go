package frontier

import (
	"errors"
	"runtime/debug"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Group commit. Every state change is a function run inside a bbolt write
// transaction; the committer runs all the changes that queued up while the
// previous transaction was being synced in the next one. A lone caller
// therefore waits for one fsync, and many concurrent callers share one. bbolt's
// own DB.Batch waits a fixed delay before committing instead, which caps a
// single worker at 1/MaxBatchDelay operations per second.
//
// A function may run more than once (when another one in its transaction
// fails, the others are retried one transaction each), so it must reset any
// result it collects, and it must not call back into the Frontier.

type op struct {
	fn func(*bolt.Tx) error
	// Exactly one of done and after is set: a synchronous caller waits on
	// done; an asynchronous one is called back by the finisher goroutine, in
	// commit order, so the committer never waits for what a callback does.
	done  chan error
	after func(error)
	units int // what an asynchronous change counts against asyncUnits
}

// maxBatch lets one commit carry every asynchronous change outstanding.
const maxBatch = asyncUnits

// asyncUnits bounds the asynchronous changes submitted but not yet called
// back: the memory they hold, and how far workers may run ahead of the
// disk before submit makes them wait. A change counts heavyUnits when it
// holds much memory until its callback (a page's links to queue, a
// document on its way to the sink), else one: so at most 128 read pages
// wait for the disk, or 1,024 unchanged ones (304s), which hold next to
// nothing. The more changes a commit carries, the fewer syncs and
// rewritten tree pages each costs: an unchanged re-crawl, whose pages cost
// the store little else, runs at the pace of its commits, and so does the
// first crawl of a large store, whose commits take longest (at a million
// pages, 128 waiting instead of 64 raised the crawl from 1,598 to 1,688
// pages a second, its peak anonymous memory 370 and 372 MiB).
const (
	asyncUnits = 1024
	heavyUnits = 8
)

// unitBytes is what a unit stands for in an outcome's Holds: a read page
// counts heavyUnits up to 64 KiB held, and a unit more for each unitBytes
// past them, so the documents waiting for the disk hold about
// 8 MiB at most (128 of 64 KiB, or 8 of 1 MiB, doc_body's default cap),
// not 128 times the largest document. An outcome holding more than every
// unit's worth takes them all: it waits alone.
const unitBytes = 8 << 10

// unitsOf is what o counts against asyncUnits.
func unitsOf(o *Outcome) int {
	if o.Found == nil && o.Pending == "" && o.Holds <= 0 {
		return 1
	}
	return min(max(heavyUnits, (o.Holds+unitBytes-1)/unitBytes), asyncUnits)
}

type finished struct {
	after func(error)
	err   error
	units int
}

// write runs fn in a durable write transaction and returns once it is
// committed (or failed).
func (f *Frontier) write(fn func(*bolt.Tx) error) error {
	if err := f.refuseWrites(); err != nil {
		return err
	}
	o := &op{fn: fn, done: make(chan error, 1)}
	f.closeMu.RLock()
	if f.closed {
		f.closeMu.RUnlock()
		return ErrClosed
	}
	f.ops <- o
	f.closeMu.RUnlock()
	return <-o.done
}

// submit queues fn for the next write transaction and returns at once;
// after is called with its outcome once it is committed (or failed). It
// waits only while the outstanding changes hold asyncUnits; fn counts
// units (1 or heavyUnits).
func (f *Frontier) submit(fn func(*bolt.Tx) error, after func(error), units int) error {
	if err := f.refuseWrites(); err != nil {
		return err
	}
	// One taker at a time, so that takers holding part of what they need
	// cannot hold every unit between them: the units are freed by changes
	// already submitted.
	f.unitsMu.Lock()
	for range units {
		f.asyncSlots <- struct{}{}
	}
	f.unitsMu.Unlock()
	f.closeMu.RLock()
	if f.closed {
		f.closeMu.RUnlock()
		for range units {
			<-f.asyncSlots
		}
		return ErrClosed
	}
	f.ops <- &op{fn: fn, after: after, units: units}
	f.closeMu.RUnlock()
	return nil
}

// refuseWrites is why no change can be made: the store is broken or
// read-only.
func (f *Frontier) refuseWrites() error {
	if se := f.broken.Load(); se != nil {
		return se
	}
	if f.readOnly {
		return errReadOnly
	}
	return nil
}

// finisher runs the callbacks of asynchronous changes, one at a time in
// commit order, off the committer.
func (f *Frontier) finisher() {
	defer close(f.finisherDone)
	for d := range f.finished {
		d.after(d.err)
		for range d.units {
			<-f.asyncSlots
		}
	}
}

func (o *op) finish(f *Frontier, err error) {
	if o.after != nil {
		// Never blocks: at most asyncUnits callbacks are outstanding.
		f.finished <- finished{o.after, err, o.units}
		return
	}
	o.done <- err
}

func (f *Frontier) committer() {
	defer close(f.committerDone)
	defer close(f.finished)
	batch := make([]*op, 0, maxBatch)
	linger, quiet := time.NewTimer(time.Hour), time.NewTimer(time.Hour)
	linger.Stop()
	quiet.Stop()
	for o := range f.ops {
		batch = append(batch[:0], o)
		waiting, units := o.after == nil, o.units
	drain:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-f.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
				waiting, units = waiting || o.after == nil, units+o.units
			default:
				break drain
			}
		}
		// Nobody waits on a batch of asynchronous changes alone, so it may
		// wait a little for more: most of a commit's cost is its syncs and
		// the tree pages it rewrites, which the changes in it share. It
		// stops short of every unit, which would leave the workers waiting
		// on submit for this very commit. Once changes stop coming for
		// lingerQuiet, none are on their way (the workers wait for this
		// commit's callbacks, say, to queue the links it holds), and it
		// commits at once.
		if !waiting && units < lingerUnits {
			linger.Reset(lingerFor)
			quiet.Reset(lingerQuiet)
		gather:
			for units < lingerUnits && len(batch) < maxBatch {
				select {
				case o, ok := <-f.ops:
					if !ok {
						break gather
					}
					batch = append(batch, o)
					units += o.units
					if o.after == nil {
						break gather
					}
					quiet.Reset(lingerQuiet)
				case <-linger.C:
					break gather
				case <-quiet.C:
					break gather
				}
			}
			linger.Stop()
			quiet.Stop()
		}
		f.commit(batch)
	}
}

// A batch of asynchronous changes alone waits up to lingerFor for
// lingerUnits: 96 read pages, or 768 unchanged ones, while they keep
// coming. In trials on the unchanged re-crawl of 100,000 pages (the same
// store re-crawled by each build in turn), 5 ms took 87-93 µs of CPU a
// page and 2 ms 93-95; later, on a slower machine, five alternations of
// 15 ms against 5 ms: 9.4-10.2 s of CPU against 9.8-10.5, 9.4-10.0 s
// against 9.9-10.6 s of wall time, 189-192 MB written against 207-214
// (each pair in 15 ms's favour). 60 ms was no faster (two runs, 12.2 s
// each, against 11.9 and 12.2 for 15 ms), likely because a commit that
// gathers most units leaves the workers waiting on submit while it syncs.
const (
	lingerFor   = 15 * time.Millisecond
	lingerQuiet = 2 * time.Millisecond
	lingerUnits = asyncUnits * 3 / 4
)

// commit runs batch in one transaction. A change that fails by itself (a
// refused edit, a key bbolt will not take) fails alone: the others are
// tried again without it. A failure of the store itself (the commit cannot
// be written, a damaged page) fails every change and breaks the store.
func (f *Frontier) commit(batch []*op) {
	if se := f.broken.Load(); se != nil {
		for _, o := range batch {
			o.finish(f, se)
		}
		return
	}
	failed := -1
	err := f.writeTx(func(tx *bolt.Tx) error {
		f.collectGarbage(tx)
		for i, o := range batch {
			if err := o.fn(tx); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	switch damage := errors.Is(err, errDamaged) || errors.Is(err, errCorrupt); {
	case err == nil:
	case failed < 0 || damage:
		err = f.fail(err, damage)
	default:
		batch[failed].finish(f, err)
		for i, o := range batch {
			if i != failed {
				f.commit([]*op{o})
			}
		}
		return
	}
	for _, o := range batch {
		o.finish(f, err)
	}
}

// writeTx runs fn in a write transaction and commits it, as bolt.DB.Update
// does, except on damage. bbolt rolls a write transaction back by
// rebuilding its freelist, and with NoFreelistSync that is a walk of the
// whole store on a goroutine of its own, where a damaged page panics out
// of reach of any recover. So a transaction that met damage (a panic on a
// page, a fault reading the mapped file, a corrupt record) is left open,
// with the store broken: its write lock only keeps out writes that would
// be refused anyway, and Close leaves the file to the process's exit.
func (f *Frontier) writeTx(fn func(*bolt.Tx) error) (err error) {
	tx, err := f.db.Begin(true)
	if err != nil {
		return err
	}
	defer debug.SetPanicOnFault(debug.SetPanicOnFault(true))
	defer func() {
		if r := recover(); r != nil {
			err = damaged("%v", r)
			if tx.DB() != nil {
				f.stuck.Store(true)
			}
		}
	}()
	if err := fn(tx); err != nil {
		if errors.Is(err, errCorrupt) || errors.Is(err, errDamaged) {
			f.stuck.Store(true)
			return err
		}
		tx.Rollback()
		return err
	}
	return tx.Commit()
}
