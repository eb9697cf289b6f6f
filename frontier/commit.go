package frontier

import (
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
}

const maxBatch = 256

// maxAsync bounds the asynchronous changes submitted but not yet called
// back: the memory they hold, and how far workers may run ahead of the
// disk before submit makes them wait.
const maxAsync = 64

type finished struct {
	after func(error)
	err   error
}

// write runs fn in a durable write transaction and returns once it is
// committed (or failed).
func (f *Frontier) write(fn func(*bolt.Tx) error) error {
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
// waits only while maxAsync changes are outstanding.
func (f *Frontier) submit(fn func(*bolt.Tx) error, after func(error)) error {
	f.asyncSlots <- struct{}{}
	f.closeMu.RLock()
	if f.closed {
		f.closeMu.RUnlock()
		<-f.asyncSlots
		return ErrClosed
	}
	f.ops <- &op{fn: fn, after: after}
	f.closeMu.RUnlock()
	return nil
}

// finisher runs the callbacks of asynchronous changes, one at a time in
// commit order, off the committer.
func (f *Frontier) finisher() {
	defer close(f.finisherDone)
	for d := range f.finished {
		d.after(d.err)
		<-f.asyncSlots
	}
}

func (o *op) finish(f *Frontier, err error) {
	if o.after != nil {
		// Never blocks: at most maxAsync callbacks are outstanding.
		f.finished <- finished{o.after, err}
		return
	}
	o.done <- err
}

func (f *Frontier) committer() {
	defer close(f.committerDone)
	defer close(f.finished)
	batch := make([]*op, 0, maxBatch)
	linger := time.NewTimer(time.Hour)
	linger.Stop()
	for o := range f.ops {
		batch = append(batch[:0], o)
		waiting := o.after == nil
	drain:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-f.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
				waiting = waiting || o.after == nil
			default:
				break drain
			}
		}
		// Nobody waits on a batch of asynchronous changes alone, so it may
		// wait a little for more: most of a commit's cost is its syncs and
		// the tree pages it rewrites, which the changes in it share.
		if !waiting && len(batch) < lingerOps {
			linger.Reset(lingerFor)
		gather:
			for len(batch) < lingerOps {
				select {
				case o, ok := <-f.ops:
					if !ok {
						break gather
					}
					batch = append(batch, o)
					if o.after == nil {
						break gather
					}
				case <-linger.C:
					break gather
				}
			}
			linger.Stop()
		}
		f.commit(batch)
	}
}

// A batch of asynchronous changes alone waits up to lingerFor for lingerOps.
const (
	lingerFor = 2 * time.Millisecond
	lingerOps = 48
)

func (f *Frontier) commit(batch []*op) {
	failed := -1
	err := f.db.Update(func(tx *bolt.Tx) error {
		f.collectGarbage(tx)
		for i, o := range batch {
			if err := o.fn(tx); err != nil {
				failed = i
				return err
			}
		}
		return nil
	})
	if err == nil || failed < 0 {
		// Success, or the commit itself failed: every op shares the outcome.
		for _, o := range batch {
			o.finish(f, err)
		}
		return
	}
	batch[failed].finish(f, err)
	for i, o := range batch {
		if i != failed {
			o.finish(f, f.db.Update(o.fn))
		}
	}
}
