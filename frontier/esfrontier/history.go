package esfrontier

import (
	"cmp"
	"context"
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Per-URL history: the last Options.History events of each URL live in
// its own document, so an event costs no request of its own: it travels
// in the _bulk line of the change it describes.
//
// The history is a ring of Options.History slots (field hist, an object
// keyed by slot number, kept in _source and not indexed) and a count of
// the events ever recorded (hn). Event n goes to slot n mod History. An
// outcome's partial update, written over the version the URL was leased
// at, sets only the slots it fills: Elasticsearch merges objects, so the
// others stay, and the scheduler reads hn but never the history itself.
// The other changes (acknowledgements, sweeps) read the record without
// its history and write it the same way. A slot is an array, which a
// merge replaces whole. A history made shorter (Options.History lowered)
// leaves its older slots until overwritten: History returns the newest.

// maxDetail bounds an event's free text, as the embedded store does.
const maxDetail = 512

// histEvent is a frontier.Event as stored, numbered.
type histEvent struct {
	N  int64
	Ev frontier.Event
}

// MarshalJSON writes [n, at, kind, status, bytes, took, class, depth,
// source, via, reason, detail].
func (h histEvent) MarshalJSON() ([]byte, error) {
	e := &h.Ev
	return json.Marshal([]any{h.N, e.At.UnixNano(), e.Kind.String(), e.Status, e.Bytes, int64(e.Took), uint8(e.Class), e.Depth,
		e.Source, e.Via, e.Reason, e.Detail})
}

func (h *histEvent) UnmarshalJSON(b []byte) error {
	var at, took int64
	var kind string
	var class uint8
	e := &h.Ev
	a := []any{&h.N, &at, &kind, &e.Status, &e.Bytes, &took, &class, &e.Depth, &e.Source, &e.Via, &e.Reason, &e.Detail}
	if err := json.Unmarshal(b, &a); err != nil {
		return err
	}
	if err := e.Kind.UnmarshalText([]byte(kind)); err != nil {
		return err
	}
	e.At, e.Took, e.Class = time.Unix(0, at).UTC(), time.Duration(took), frontier.Class(class)
	return nil
}

// histSlots numbers evs from n on and returns the slots they fill and the
// count after them.
func (s *Store) histSlots(n int64, evs []frontier.Event) (map[string]histEvent, int64) {
	if s.histLen <= 0 || len(evs) == 0 {
		return nil, n
	}
	now := s.now()
	slots := make(map[string]histEvent, min(len(evs), s.histLen))
	for _, e := range evs {
		if e.At.IsZero() {
			e.At = now
		}
		if len(e.Detail) > maxDetail {
			e.Detail = e.Detail[:maxDetail]
		}
		e.Bytes, e.Took = max(e.Bytes, 0), max(e.Took, 0)
		slots[strconv.FormatInt(n%int64(s.histLen), 10)] = histEvent{N: n, Ev: e}
		n++
	}
	return slots, n
}

// addHist records evs in the history of d, a document to be created.
func (s *Store) addHist(d *doc, evs []frontier.Event) {
	d.Hist, d.HistN = s.histSlots(d.HistN, evs)
}

// outcomeEvents are the events a completion records: its own, then the
// outcome's (the write handed to the sink, say).
func outcomeEvents(c *completion, now time.Time) []frontier.Event {
	o := &c.o
	detail := o.Detail
	if detail == "" {
		detail = o.Target
	}
	evs := []frontier.Event{{At: now, Kind: outcomeKind(o.State), Status: o.Status, Reason: o.Reason, Detail: detail,
		Bytes: c.l.bytes, Took: c.l.took}}
	for _, e := range o.History {
		if e.At.IsZero() {
			e.At = now
		}
		evs = append(evs, e)
	}
	return evs
}

func outcomeKind(s frontier.State) frontier.EventKind {
	switch s {
	case frontier.Fetched:
		return frontier.EventFetched
	case frontier.Error:
		return frontier.EventError
	case frontier.Excluded:
		return frontier.EventExcluded
	default:
		return frontier.EventRetry
	}
}

// sweepEvent is what a change of state made by a sweep records, where
// the change noted none itself.
func sweepEvent(before, after *frontier.Record) (frontier.Event, bool) {
	switch {
	case before.State == after.State:
		return frontier.Event{}, false
	case after.State == frontier.Waiting:
		return frontier.Event{Kind: frontier.EventRequeued, Class: after.Class, Reason: "requeued"}, true
	case after.State == frontier.Excluded:
		return frontier.Event{Kind: frontier.EventDropped, Reason: after.Reason}, true
	}
	return frontier.Event{}, false
}

// History returns the URL's events, oldest first.
func (s *Store) History(url string) ([]frontier.Event, error) {
	a, err := s.get(context.Background(), s.urls, docID(url), urlnorm.Origin(url))
	if err != nil {
		return nil, &Error{Op: "read the history of " + url, Err: err}
	}
	if !a.Found {
		return nil, nil
	}
	var d struct {
		Hist map[string]histEvent `json:"hist"`
	}
	if err := jsonUnmarshal(a.Source, &d); err != nil {
		return nil, err
	}
	hs := slices.Collect(maps.Values(d.Hist))
	slices.SortFunc(hs, func(a, b histEvent) int { return cmp.Compare(a.N, b.N) })
	if s.histLen > 0 && len(hs) > s.histLen {
		hs = hs[len(hs)-s.histLen:]
	}
	out := make([]frontier.Event, len(hs))
	for i := range hs {
		out[i] = hs[i].Ev
	}
	return out, nil
}
