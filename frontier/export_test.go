package frontier

import (
	"bytes"
	"context"
	"time"

	"github.com/crawlspace/crawlspace/urlnorm"
	bolt "go.etcd.io/bbolt"
)

// What only the tests use: synchronous completion, a lease without
// waiting, single record edits and deletion. The crawler goes through
// the data of Store (interface.go).

// TryNext is Next without waiting: it returns a lease, or nil and how long
// until a host becomes ready (-1 when only a completion or an Add can
// help), or ErrDone.
func (f *Frontier) TryNext() (*lease, time.Duration, error) {
	for {
		f.mu.Lock()
		l, wait, more, err := f.tryNextLocked()
		notes := f.takeNotesLocked()
		f.mu.Unlock()
		f.notify(notes)
		if !more {
			return l, wait, err
		}
	}
}

// TryRequest is Request without waiting: done, or nil and how long until
// the host's delay is over (-1 when its slots are all taken).
func (f *Frontier) TryRequest(hostKey string) (func(), time.Duration, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.tryRequestLocked(hostKey)
}

// Complete records the outcome as CompleteAsync does, but returns once it
// is stored, and frees the host's slot only then.
func (l *lease) Complete(o Outcome) error {
	if l.done {
		return errLeaseDone
	}
	c, err := l.completion(&o)
	if err != nil {
		l.abandon(&o)
		return err
	}
	if err := l.f.write(c.fn); err != nil {
		l.abandon(&o)
		return err
	}
	c.q.remember()
	l.done = true
	f := l.f
	f.mu.Lock()
	l.freeSlotLocked(&o, c)
	c.finishLocked(l)
	f.working--
	f.signal()
	f.mu.Unlock()
	f.notify(c.notes)
	return nil
}

// Log appends ev to url's history in its own durable transaction (shared
// with concurrent changes by the group commit), for events with no change
// of the record to ride with; UpdateLog records both in one. A URL the
// store does not know is ignored.
func (f *Frontier) Log(url string, ev Event) error {
	if !f.historyOn() {
		return nil
	}
	return f.write(func(tx *bolt.Tx) error {
		w := newWtx(tx)
		key, v, err := w.lookup(url)
		if err != nil || v == nil {
			return err
		}
		e := ev
		return f.event(w, key, &e)
	})
}

// UpdateLog is Update that also appends ev to the URL's history, in the
// same transaction, when the change is made.
func (f *Frontier) UpdateLog(url string, ev Event, fn func(*Record) error) error {
	if !f.historyOn() {
		return f.update(url, nil, fn)
	}
	return f.update(url, &ev, fn)
}

// dropHistory deletes every event of the URL key.
func dropHistory(tx *bolt.Tx, key []byte) error {
	b := tx.Bucket(bucketRecords)
	prefix := append(append(make([]byte, 0, len(key)+1), key...), 0)
	c := b.Cursor()
	for k, _ := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix) && len(k) == len(prefix)+4; k, _ = c.Seek(prefix) {
		if err := c.Delete(); err != nil {
			return err
		}
	}
	return nil
}

// forget uncounts a record leaving the store.
func (w *wtx) forget(f *Frontier, r *Record) error {
	s, err := w.source(f, r.Source)
	if err != nil {
		return err
	}
	h, err := w.host(s, urlnorm.Origin(r.URL))
	if err != nil {
		return err
	}
	s.u.URLs = max(s.u.URLs-1, 0)
	h.u.URLs = max(h.u.URLs-1, 0)
	if h.u.URLs == 0 && h.u.Queued {
		h.u.Queued = false
		s.u.Hosts = max(s.u.Hosts-1, 0)
	}
	s.dirty, h.dirty = true, true
	return nil
}

// Update changes a URL's record in one durable transaction; fn may run more
// than once and must not call the Frontier. Bookkeeping fields (DocID,
// Indexed, Pending, Target, validators…) can always change. The state can
// change too, except for a leased URL (it reads InFlight and must stay so,
// or ErrLeased is returned); a URL set to Waiting is queued at the tail of
// its class, and one taken out of Waiting leaves its queue. The URL and
// its source cannot change. ErrNotFound is returned for an unknown URL;
// fn's error is returned as is and nothing changes.
func (f *Frontier) Update(url string, fn func(*Record) error) error {
	return f.update(url, nil, fn)
}

func (f *Frontier) update(url string, ev *Event, fn func(*Record) error) error {
	c := []edit{{URL: url, Fn: fn}}
	if ev != nil {
		c[0].Events = []Event{*ev}
	}
	if err := f.updateBatch(c); err != nil {
		return err
	}
	return c[0].Err
}

// Delete forgets a URL (Exalead: the status of a URL in permanent error is
// removed, and only a new link brings it back). A leased URL is not deleted.
func (f *Frontier) Delete(url string) error {
	var res error
	cl := claims{f: f}
	err := f.write(func(tx *bolt.Tx) error {
		res = nil
		w := newWtx(tx)
		key, v, err := w.lookup(url)
		if err != nil {
			return err
		}
		if v == nil {
			res = ErrNotFound
			return nil
		}
		var old Record
		if err := decodeRecord(v, &old, true); err != nil {
			return err
		}
		if old.State == Waiting {
			if !cl.take(w, &old) {
				res = ErrLeased
				return nil
			}
			if err := w.dequeue(&old); err != nil {
				return err
			}
		}
		if err := w.p.Delete(key); err != nil {
			return err
		}
		if err := dropHistory(tx, key); err != nil {
			return err
		}
		if err := w.dropLinks(url); err != nil {
			return err
		}
		if err := w.forget(f, &old); err != nil {
			return err
		}
		if err := w.flush(); err != nil {
			return err
		}
		if err := w.x.Delete([]byte(url)); err != nil {
			return err
		}
		return w.u.Delete(key)
	})
	cl.release()
	// A deleted URL must be new to Add again.
	f.seen.reset()
	if err != nil {
		return err
	}
	return res
}

// Change, UpdateBatch and UpdateEach are edit, updateBatch and
// updateEach under the names the tests were written with.
type Change = edit

func (f *Frontier) UpdateBatch(changes []edit) error { return f.updateBatch(changes) }

func (f *Frontier) UpdateEach(urls []string, fn func(*Record) (bool, []Event)) ([]Record, error) {
	return f.updateEach(urls, fn)
}

// next is Next with the bbolt lease, which completes synchronously too.
func (f *Frontier) next(ctx context.Context) (*lease, error) {
	l, err := f.Next(ctx)
	if l == nil {
		return nil, err
	}
	return l.(*lease), err
}

// ForEach is ForEach over one source's records.
func (f *Frontier) ForEach(source string, fn func(Record) error) error {
	return ForEach(f, Query{Source: source}, fn)
}

// pendingEach calls fn with each record Pending lists.
func (f *Frontier) pendingEach(fn func(Record) error) error {
	recs, err := f.Pending()
	for _, r := range recs {
		if err == nil {
			err = fn(r)
		}
	}
	return err
}
