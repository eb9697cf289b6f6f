package frontier

import (
	"maps"
	"slices"
)

// Reasons the history gives an operator's requests.
const (
	reasonRecrawlRequested = "recrawl_requested"
	detailRemoveRequested  = "remove_requested"
)

// Pause keeps the URLs of sources from new leases (see Control). Their
// queue entries are passed over as those a page limit holds back are, and
// their hosts kept, so that a source leaving the list has its hosts' queues
// read again from the start, in the cycle running.
func (f *Frontier) Pause(sources []string) error {
	next := make(map[string]bool, len(sources))
	for _, s := range sources {
		next[s] = true
	}
	f.mu.Lock()
	resumed := false
	for s := range f.paused {
		resumed = resumed || !next[s]
	}
	f.paused = next
	f.mu.Unlock()
	if !resumed {
		return nil
	}
	return f.rewindPaused()
}

// Paused lists the sources Pause keeps back.
func (f *Frontier) Paused() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Sorted(maps.Keys(f.paused))
}

// rewindPaused makes the queue entries passed over for a paused source
// visible again within the cycle. Entries a page limit holds back on the
// same hosts are passed over again, and not counted again: each queue
// remembers how far its entries were noted.
func (f *Frontier) rewindPaused() error {
	f.mu.Lock()
	any := false
	for _, h := range f.hosts {
		if !h.pausedBack {
			continue
		}
		h.pausedBack, any = false, true
		for i := range h.lv {
			s := &h.lv[i]
			s.noted = max(s.noted, s.last)
			s.last = 0
		}
	}
	f.mu.Unlock()
	if !any {
		return nil
	}
	return f.rebuild()
}

// Recrawl queues known URLs at once in class (see Control).
func (f *Frontier) Recrawl(urls []string, class Class) ([]error, error) {
	cycle := f.cycle.Load()
	return f.edits(urls, func(string) edit {
		return edit{Refetch: true, Events: []Event{{Kind: EventRequeued, Class: class, Reason: reasonRecrawlRequested}},
			Fn: func(r *Record) error {
				r.Hash = ""
				if r.State == InFlight {
					return nil // Refetch has the lease queue it again
				}
				r.State, r.Class, r.Reason, r.Cycle = Waiting, class, "", cycle
				return nil
			}}
	}, nil)
}

// Remove takes known URLs out of the crawl with reason (see Control).
func (f *Frontier) Remove(urls []string, reason string) ([]Record, []error, error) {
	recs := make([]Record, len(urls))
	errs, err := f.edits(urls, func(string) edit {
		return edit{Events: []Event{{Kind: EventDropped, Reason: reason, Detail: detailRemoveRequested}},
			Fn: func(r *Record) error {
				if r.State == InFlight {
					return ErrLeased
				}
				if r.Indexed || r.Pending == PendingIndex {
					r.Pending = PendingDelete
				}
				r.State, r.Reason = Excluded, reason
				return nil
			}}
	}, recs)
	return recs, errs, err
}

// edits makes the edit of each URL, in chunks of one transaction; errs is
// each edit's refusal. recs, when not nil, receives each URL's record as
// stored.
func (f *Frontier) edits(urls []string, mk func(url string) edit, recs []Record) ([]error, error) {
	errs := make([]error, len(urls))
	changes := make([]edit, 0, min(len(urls), writeChunk))
	for start := 0; start < len(urls); start += writeChunk {
		chunk := urls[start:min(start+writeChunk, len(urls))]
		changes = changes[:0]
		for _, u := range chunk {
			e := mk(u)
			e.URL = u
			changes = append(changes, e)
		}
		if err := f.updateBatch(changes); err != nil {
			return errs, err
		}
		for i, c := range changes {
			errs[start+i] = c.Err
			if recs != nil && c.Err == nil {
				recs[start+i] = c.Record
			}
		}
	}
	return errs, nil
}
