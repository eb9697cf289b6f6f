package frontier

import (
	"errors"
	"fmt"
	"slices"
)

// Ack is the index's answer to a document write recorded pending.
type Ack struct {
	URL string
	// Delete says the write answered was a delete (PendingDelete), else an
	// index (PendingIndex).
	Delete bool
	// Failed says the index refused the write for good. It stays pending,
	// to be sent again by the next cycle, and the hash is forgotten, so the
	// page's next fetch writes it whatever it holds; a refused document of
	// a Fetched URL puts the URL in Error with Reason.
	Failed bool
	Reason string
	// Event goes to the URL's history.
	Event Event
}

// Pending lists the records whose Pending write is an index or a delete,
// without walking the others: after a crash or an outage, these are the
// writes to send again. A delete held back (HeldDelete) is Held's.
func (f *Frontier) Pending() ([]Record, error) {
	var out []Record
	err := f.scan(bucketPending, func(r *Record) error {
		// A record without a write is a stale index entry (harmless); a
		// held delete was never sent.
		if r.Pending != "" && !HeldDelete(r.Pending) {
			out = append(out, *r)
		}
		return nil
	})
	return out, err
}

// Held lists the records of source ("" for every source) whose delete is
// held back from the index (PendingHold or PendingHeld), without walking
// the others.
func (f *Frontier) Held(source string) ([]Record, error) {
	var out []Record
	err := f.scan(bucketPending, func(r *Record) error {
		if HeldDelete(r.Pending) && (source == "" || r.Source == source) {
			out = append(out, *r)
		}
		return nil
	})
	return out, err
}

// MoveHeld moves the held deletes of urls (PendingHold or PendingHeld) to
// to: PendingDelete, to be sent, or PendingHeld. Each URL moved gets ev in
// its history; a URL whose delete is not held, or held as to already, is
// left as it is. It returns the records it moved, as stored, in
// transactions of up to writeChunk URLs.
func (f *Frontier) MoveHeld(urls []string, to string, ev Event) ([]Record, error) {
	if to != PendingDelete && to != PendingHeld {
		return nil, fmt.Errorf("frontier: cannot move a held delete to %q", to)
	}
	return f.updateAll(urls, func(r *Record) (bool, []Event) {
		if !HeldDelete(r.Pending) || r.Pending == to {
			return false, nil
		}
		r.Pending = to
		return true, []Event{ev}
	})
}

// Acknowledge records acks in one transaction: an acknowledged write is
// done (unless a newer write of the other kind is pending since it was
// sent) and the index holds the document or not; a refused one stays
// pending (see Ack.Failed).
func (f *Frontier) Acknowledge(acks []Ack) ([]error, error) {
	changes := make([]edit, len(acks))
	for i := range acks {
		a := &acks[i]
		changes[i] = edit{URL: a.URL, Events: []Event{a.Event}, Fn: func(r *Record) error {
			if a.Failed {
				r.Hash = ""
				if !a.Delete && r.State == Fetched {
					r.State, r.Reason = Error, a.Reason
				}
				return nil
			}
			pending := PendingIndex
			if a.Delete {
				pending = PendingDelete
			}
			if r.Pending == pending {
				r.Pending = ""
			}
			r.Indexed = !a.Delete
			return nil
		}}
	}
	return f.refusals(changes)
}

// Refetch forgets the hashes of urls and queues those not waiting or
// leased as Refresh, in transactions of up to writeChunk URLs. A leased
// one is queued again by its outcome unless that brings a new hash, since
// a 304 writes no document; one whose outcome is stored already, its
// lease not ended yet, is queued as if it were not leased.
func (f *Frontier) Refetch(urls []string) error {
	changes := make([]edit, 0, min(len(urls), writeChunk))
	for chunk := range slices.Chunk(urls, writeChunk) {
		changes = changes[:0]
		for _, u := range chunk {
			changes = append(changes, edit{URL: u, Refetch: true, Fn: func(r *Record) error {
				r.Hash = ""
				if r.State != Waiting && r.State != InFlight {
					r.State, r.Class = Waiting, Refresh
				}
				return nil
			}})
		}
		if err := f.updateBatch(changes); err != nil {
			return err
		}
		for _, c := range changes {
			if c.Err != nil && !errors.Is(c.Err, ErrNotFound) {
				return c.Err
			}
		}
	}
	return nil
}
