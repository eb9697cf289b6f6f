package esfrontier

import (
	"maps"
	"slices"

	"github.com/crawlspace/crawlspace/frontier"
)

// Pause keeps the URLs of sources from this process's leases (see
// frontier.Control): the due-URL reads and the idle check leave them out,
// so the cycle ends without them. Every process of a crawl is told by its
// own caller (the provider reads the paused sources from the shared meta).
func (s *Store) Pause(sources []string) error {
	q := s.sched
	next := make(map[string]bool, len(sources))
	for _, src := range sources {
		next[src] = true
	}
	q.mu.Lock()
	changed := !maps.Equal(next, q.paused)
	for src := range next {
		if !q.paused[src] {
			for _, h := range q.hosts {
				h.queue = dropSource(h.queue, src)
			}
		}
	}
	q.paused = next
	q.mu.Unlock()
	if changed {
		q.askLoad()
		q.signal()
	}
	return nil
}

// pausedClausesLocked is the must_not clause that leaves the paused
// sources' URLs out of a read. q.mu is held.
func (q *scheduler) pausedClausesLocked() []any {
	if len(q.paused) == 0 {
		return nil
	}
	return []any{map[string]any{"terms": map[string]any{"source": slices.Sorted(maps.Keys(q.paused))}}}
}

// Recrawl queues known URLs at once in class (see frontier.Control). A
// URL this process has leased is left to its lease (ErrLeased): the
// record's version moves with its outcome, which a change made meanwhile
// would only make fail.
func (s *Store) Recrawl(urls []string, class frontier.Class) ([]error, error) {
	errs := make([]error, len(urls))
	for start := 0; start < len(urls); start += pageSize {
		chunk := urls[start:min(start+pageSize, len(urls))]
		_, _, cerrs, err := s.changeNoting(chunk, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
			if s.leased(r.URL) {
				return false, frontier.ErrLeased
			}
			r.Hash = ""
			s.requeue(r, class)
			note(frontier.Event{Kind: frontier.EventRequeued, Class: class, Reason: "recrawl_requested"})
			return true, nil
		})
		if err != nil {
			return errs, err
		}
		copy(errs[start:], cerrs)
	}
	s.sched.askLoad()
	return errs, nil
}

// Remove takes known URLs out of the crawl with reason (see
// frontier.Control).
func (s *Store) Remove(urls []string, reason string) ([]frontier.Record, []error, error) {
	recs := make([]frontier.Record, len(urls))
	errs := make([]error, len(urls))
	dropped := map[string]string{}
	for start := 0; start < len(urls); start += pageSize {
		chunk := urls[start:min(start+pageSize, len(urls))]
		got, _, cerrs, err := s.changeNoting(chunk, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
			if s.leased(r.URL) {
				return false, frontier.ErrLeased
			}
			if r.Indexed || r.Pending == frontier.PendingIndex {
				r.Pending = frontier.PendingDelete
			}
			r.State, r.Reason = frontier.Excluded, reason
			note(frontier.Event{Kind: frontier.EventDropped, Reason: reason, Detail: "remove_requested"})
			return true, nil
		})
		if err != nil {
			return recs, errs, err
		}
		copy(recs[start:], got)
		copy(errs[start:], cerrs)
		for i, e := range cerrs {
			if e == nil {
				dropped[chunk[i]] = reason
			}
		}
	}
	s.sched.dropURLs(dropped)
	return recs, errs, nil
}
