package frontier

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Per-URL history: the last Options.History events of each URL, so an
// administrator can see why a page is missing — when it was found and
// from where, each fetch and its status, each decision, each index write
// and its acknowledgement — without reading logs.
//
// Events live beside the URL's record in bucket "r", under the record's
// key, a zero byte and a 4-byte per-URL sequence: one URL's events are
// contiguous, in order, right after its record, and the newest is one seek
// away. They are written in the transaction of the change they describe
// (Add, Exclude, Complete, Update, the sweeps), so a history never claims
// a change that was rolled back. Beside the record, an event usually lands
// on the leaf its change rewrites anyway. Every walk of the records skips
// them (isHistoryKey): a record's key has recordKeyLen bytes, an event's
// historyKeyLen more.
//
// Stores of format 1 kept them in bucket "e", keyed by URL; format 2
// beside records keyed by URL: migrate moves both on the first Open for
// writing.

// historyKeyLen is what a history key adds to its record's key: the zero
// byte and the sequence.
const historyKeyLen = 5

// isHistoryKey says whether a key of the records is a history event's
// rather than a record's.
func isHistoryKey(k []byte) bool { return len(k) != recordKeyLen }

// DefaultHistory is the history length the crawler keeps per URL.
const DefaultHistory = 32

// maxDetail bounds an event's free text (an error message, say).
const maxDetail = 512

// EventKind is what happened to a URL.
type EventKind uint8

const (
	EventQueued      EventKind = iota + 1 // queued by Add (Source, Class, Depth, Via)
	EventRefused                          // found outside the crawl space (Exclude; Reason)
	EventRequeued                         // queued again: aged check, clear-errors, a rebuild, a config change, an orphan linked again (Class; Reason or Detail says which)
	EventDropped                          // taken out of the crawl by Drop, or by Reapply after a config change (Reason)
	EventFetched                          // fetched (Status, Bytes, Took; Detail: a redirect or canonical target)
	EventError                            // a permanent error (Reason, Status)
	EventExcluded                         // excluded when leased or after its fetch (Reason, Detail)
	EventRetry                            // a temporary error: queued again after a backoff (Reason, Status)
	EventWriteSent                        // an index write handed to the sink (Reason: index or delete)
	EventWriteDone                        // the sink acknowledged it (Reason: created, updated, deleted…)
	EventWriteFailed                      // the sink rejected it for good (Status, Detail)
	EventOrphan                           // found unlinked, or linked again (Reason: the policy's action, or linked)
	EventDeleteHeld                       // a delete held back from the index (Reason: hold or held; Detail says why)
	numEventKinds
)

var eventNames = [numEventKinds]string{"", "queued", "refused", "requeued", "dropped", "fetched",
	"error", "excluded", "retry", "write_sent", "write_done", "write_failed", "orphan", "delete_held"}

func (k EventKind) String() string {
	if k > 0 && k < numEventKinds {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// MarshalText makes events readable in JSON.
func (k EventKind) MarshalText() ([]byte, error) { return []byte(k.String()), nil }

// UnmarshalText reads a name MarshalText wrote.
func (k *EventKind) UnmarshalText(b []byte) error {
	for i, n := range eventNames {
		if i > 0 && n == string(b) {
			*k = EventKind(i)
			return nil
		}
	}
	return fmt.Errorf("frontier: unknown event %q", b)
}

// Event is one entry of a URL's history. Complete fills At, the outcome's
// state, Reason, Status and Target itself.
type Event struct {
	At     time.Time
	Kind   EventKind
	Status int
	Bytes  int64
	Took   time.Duration
	Class  Class
	Depth  int
	Source string
	Via    string
	Reason string
	Detail string
}

func (f *Frontier) historyOn() bool { return f.histLen > 0 }

// event appends ev to the history of the record key within w's transaction
// and trims the oldest beyond the history length.
func (f *Frontier) event(w *wtx, key []byte, ev *Event) error {
	if f.histLen <= 0 {
		return nil
	}
	if ev.At.IsZero() {
		ev.At = f.now()
	}
	var seq uint32
	n := len(w.arena)
	if w.eventSeq > 0 && bytes.Equal(w.eventKey, key) {
		// The op's own last event: an aged check writes two in a row.
		seq = w.eventSeq
	} else {
		// The newest entry is the last key below key|0x01.
		w.arena = append(append(w.arena, key...), 1)
		c := w.u.Cursor()
		k, _ := c.Seek(w.arena[n:])
		if k == nil {
			k, _ = c.Last()
		} else {
			k, _ = c.Prev()
		}
		w.arena = w.arena[:n]
		if len(k) == len(key)+5 && k[len(key)] == 0 && bytes.Equal(k[:len(key)], key) {
			seq = binary.BigEndian.Uint32(k[len(key)+1:])
		}
	}
	seq++
	w.eventKey, w.eventSeq = append(w.eventKey[:0], key...), seq
	w.arena = binary.BigEndian.AppendUint32(append(append(w.arena, key...), 0), seq)
	hk := w.arena[n:len(w.arena):len(w.arena)]
	m := len(w.arena)
	w.arena = appendEvent(w.arena, ev)
	if err := w.u.Put(hk, w.arena[m:len(w.arena):len(w.arena)]); err != nil {
		return err
	}
	if seq <= uint32(f.histLen) {
		return nil
	}
	n = len(w.arena)
	w.arena = binary.BigEndian.AppendUint32(append(append(w.arena, key...), 0), seq-uint32(f.histLen))
	return w.u.Delete(w.arena[n:len(w.arena):len(w.arena)])
}

// History returns the URL's events, oldest first.
func (f *Frontier) History(url string) ([]Event, error) {
	if f.shut.Load() {
		return nil, ErrClosed
	}
	var out []Event
	err := f.view(func(tx *bolt.Tx) error {
		out = out[:0]
		key := tx.Bucket(bucketIndex).Get([]byte(url))
		if len(key) != recordKeyLen {
			return nil
		}
		prefix := append(bytes.Clone(key), 0)
		c := tx.Bucket(bucketRecords).Cursor()
		for k, v := c.Seek(prefix); k != nil && bytes.HasPrefix(k, prefix); k, v = c.Next() {
			if len(k) != len(prefix)+4 {
				continue
			}
			var ev Event
			if err := decodeEvent(v, &ev); err != nil {
				return fmt.Errorf("%w: history of %s", err, url)
			}
			out = append(out, ev)
		}
		return nil
	})
	return out, err
}

// Encoding: kind, class, then varints (time, status, bytes, took, depth),
// then the string lengths and bytes.
const eventVersion = 1

func appendEvent(b []byte, ev *Event) []byte {
	b = append(b, eventVersion, byte(ev.Kind), byte(ev.Class))
	b = binary.AppendVarint(b, unixNano(ev.At))
	b = binary.AppendUvarint(b, uint64(ev.Status))
	b = binary.AppendUvarint(b, uint64(max(ev.Bytes, 0)))
	b = binary.AppendUvarint(b, uint64(max(ev.Took, 0)))
	b = binary.AppendUvarint(b, uint64(max(ev.Depth, 0)))
	detail := ev.Detail
	if len(detail) > maxDetail {
		detail = detail[:maxDetail]
	}
	strs := [...]string{ev.Source, ev.Via, ev.Reason, detail}
	for _, s := range strs {
		b = binary.AppendUvarint(b, uint64(len(s)))
	}
	for _, s := range strs {
		b = append(b, s...)
	}
	return b
}

func decodeEvent(b []byte, ev *Event) error {
	if len(b) < 3 || b[0] != eventVersion {
		return errCorrupt
	}
	*ev = Event{Kind: EventKind(b[1]), Class: Class(b[2])}
	d := decoder{b: b[3:]}
	ev.At = fromUnixNano(d.varint())
	ev.Status = int(d.uvarint())
	ev.Bytes = int64(d.uvarint())
	ev.Took = time.Duration(d.uvarint())
	ev.Depth = int(d.uvarint())
	var lens [4]uint64
	total := uint64(0)
	for i := range lens {
		lens[i] = d.uvarint()
		total += lens[i]
	}
	if d.err != nil {
		return d.err
	}
	if total != uint64(len(d.b)) {
		return errCorrupt
	}
	all := string(d.b)
	off := uint64(0)
	for i, p := range [...]*string{&ev.Source, &ev.Via, &ev.Reason, &ev.Detail} {
		*p = all[off : off+lens[i]]
		off += lens[i]
	}
	return nil
}

// outcomeKind is the event a completion records.
func outcomeKind(s State) EventKind {
	switch s {
	case Fetched:
		return EventFetched
	case Error:
		return EventError
	case Excluded:
		return EventExcluded
	default:
		return EventRetry
	}
}

// queuedEvent records that Add queued it.
func (f *Frontier) queuedEvent(w *wtx, key []byte, it *Item) error {
	if !f.historyOn() {
		return nil
	}
	ev := Event{Kind: EventQueued, Source: it.Source, Class: it.Class, Depth: it.Depth, Via: it.Via}
	return f.event(w, key, &ev)
}

// Fetched notes the size and duration of the request made for the lease,
// for the history event its completion records.
func (l *lease) Fetched(bytes int64, took time.Duration) { l.bytes, l.took = bytes, took }

// events records a completion and the outcome's further events.
func (l *lease) events(w *wtx, key []byte, o *Outcome, now time.Time) error {
	f := l.f
	if !f.historyOn() {
		return nil
	}
	detail := o.Detail
	if detail == "" {
		detail = o.Target
	}
	ev := Event{At: now, Kind: outcomeKind(o.State), Status: o.Status, Reason: o.Reason, Detail: detail,
		Bytes: l.bytes, Took: l.took}
	if err := f.event(w, key, &ev); err != nil {
		return err
	}
	for i := range o.History {
		e := o.History[i]
		if e.At.IsZero() {
			e.At = now
		}
		if err := f.event(w, key, &e); err != nil {
			return err
		}
	}
	return nil
}

// sweepEvent records a change a sweep made.
func (w *wtx) sweepEvent(key []byte, ev Event) error {
	if w.f == nil {
		return nil
	}
	return w.f.event(w, key, &ev)
}
