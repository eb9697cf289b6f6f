package frontier

import (
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
	fn   func(*bolt.Tx) error
	done chan error
}

const maxBatch = 256

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

func (f *Frontier) committer() {
	defer close(f.committerDone)
	batch := make([]*op, 0, maxBatch)
	for o := range f.ops {
		batch = append(batch[:0], o)
	drain:
		for len(batch) < maxBatch {
			select {
			case o, ok := <-f.ops:
				if !ok {
					break drain
				}
				batch = append(batch, o)
			default:
				break drain
			}
		}
		f.commit(batch)
	}
}

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
			o.done <- err
		}
		return
	}
	batch[failed].done <- err
	for i, o := range batch {
		if i != failed {
			o.done <- f.db.Update(o.fn)
		}
	}
}
