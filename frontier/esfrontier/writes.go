package esfrontier

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Changes to known records read them with one _mget, change them in
// memory and write them back with one _bulk, each item with the
// if_seq_no/if_primary_term it was read with; one another process changed
// meanwhile is read and judged again.

const pageSize = 1024

// stored is a record as read, with what writing it back needs.
type stored struct {
	doc       doc
	seq, term int64
}

func (s *Store) mget(ctx context.Context, urls []string) ([]*stored, error) {
	docs := make([]map[string]any, len(urls))
	for i, u := range urls {
		docs[i] = map[string]any{"_id": docID(u), "routing": urlnorm.Origin(u), "_source": map[string]any{"excludes": []string{"hist"}}}
	}
	var ans struct {
		Docs []struct {
			Found       bool  `json:"found"`
			SeqNo       int64 `json:"_seq_no"`
			PrimaryTerm int64 `json:"_primary_term"`
			Source      doc   `json:"_source"`
		} `json:"docs"`
	}
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_mget", map[string]any{"docs": docs}, &ans); err != nil {
		return nil, err
	}
	out := make([]*stored, len(urls))
	for i := range ans.Docs {
		if d := &ans.Docs[i]; d.Found && i < len(out) {
			out[i] = &stored{doc: d.Source, seq: d.SeqNo, term: d.PrimaryTerm}
		}
	}
	return out, nil
}

// change applies fn to the records of urls; fn reports whether it changed
// the record, or an error refusing it. It returns each URL's record as
// stored after the change and its refusal (frontier.ErrNotFound, or fn's).
func (s *Store) change(urls []string, fn func(r *frontier.Record) (bool, error)) ([]frontier.Record, []bool, []error, error) {
	return s.changeNoting(urls, func(r *frontier.Record, _ func(...frontier.Event)) (bool, error) { return fn(r) })
}

// changeNoting is change where fn may note the events its change adds to
// the URL's history; a change of state it notes none for records the
// sweep's event (sweepEvent). The history is neither read nor written
// whole: the records are read without it and written back as partial
// updates of every other field plus the slots the events fill.
func (s *Store) changeNoting(urls []string, fn func(r *frontier.Record, note func(...frontier.Event)) (bool, error)) ([]frontier.Record, []bool, []error, error) {
	return s.changeStored(urls, func(_ *doc, r *frontier.Record, note func(...frontier.Event)) (map[string]any, bool, error) {
		ok, err := fn(r, note)
		return nil, ok, err
	})
}

// changeStored is changeNoting where fn also sees the URL's document as
// read, for the fields no record holds, and returns more fields to write.
func (s *Store) changeStored(urls []string, fn func(d *doc, r *frontier.Record, note func(...frontier.Event)) (map[string]any, bool, error)) ([]frontier.Record, []bool, []error, error) {
	ctx := context.Background()
	recs := make([]frontier.Record, len(urls))
	changed := make([]bool, len(urls))
	errs := make([]error, len(urls))
	todo := make([]int, len(urls))
	for i := range todo {
		todo[i] = i
	}
	for attempt := 0; len(todo) > 0; attempt++ {
		if attempt == 10 {
			return recs, changed, errs, &Error{Op: "change records", Err: errors.New("changed by others ten times in a row")}
		}
		us := make([]string, len(todo))
		for j, i := range todo {
			us[j] = urls[i]
		}
		got, err := s.mget(ctx, us)
		if err != nil {
			return recs, changed, errs, &Error{Op: "read records", Err: err}
		}
		var b ndjson
		var sent []int
		now := s.now().UnixNano()
		for j, i := range todo {
			st := got[j]
			if st == nil {
				errs[i] = frontier.ErrNotFound
				continue
			}
			r := st.doc.record()
			before := r
			wasWaiting := r.State == frontier.Waiting
			var evs []frontier.Event
			extra, ok, ferr := fn(&st.doc, &r, func(e ...frontier.Event) { evs = append(evs, e...) })
			recs[i], errs[i], changed[i] = r, ferr, ok && ferr == nil
			if !changed[i] {
				recs[i] = st.doc.record()
				continue
			}
			seq := st.doc.Seq
			if r.State == frontier.Waiting && !wasWaiting {
				seq = now + int64(j)
			}
			d := s.toDoc(&r, seq)
			if len(evs) == 0 {
				if e, ok := sweepEvent(&before, &r); ok {
					evs = append(evs, e)
				}
			}
			// Every field but the history, which keeps the slots not filled.
			f := wholeDoc(&d)
			maps.Copy(f, extra)
			if slots, n := s.histSlots(st.doc.HistN, evs); len(slots) > 0 {
				f["hist"], f["hn"] = slots, n
			}
			b.line(map[string]any{"update": map[string]any{"_index": s.urls, "_id": docID(r.URL), "routing": d.Host,
				"if_seq_no": st.seq, "if_primary_term": st.term}})
			b.line(map[string]any{"doc": f})
			sent = append(sent, i)
		}
		items, err := s.bulk(ctx, b.Bytes(), "")
		if err != nil {
			return recs, changed, errs, &Error{Op: "write records", Err: err}
		}
		todo = todo[:0]
		for k, i := range sent {
			switch {
			case k >= len(items):
				errs[i] = errors.New("esfrontier: short _bulk answer")
			case items[k].Status == 409:
				todo = append(todo, i)
			case items[k].Status == 404: // deleted since it was read
				errs[i], changed[i] = frontier.ErrNotFound, false
			default:
				if e := itemError(&items[k]); e != nil {
					errs[i], changed[i] = e, false
				}
			}
		}
	}
	return recs, changed, errs, nil
}

// leased says whether this process has url leased.
func (s *Store) leased(url string) bool {
	q := s.sched
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.leases[url] != nil
}

// Get returns a URL's record (InFlight when this process has it leased).
func (s *Store) Get(url string) (frontier.Record, bool, error) {
	a, err := s.get(context.Background(), s.urls, docID(url), urlnorm.Origin(url))
	if err != nil {
		return frontier.Record{}, false, &Error{Op: "read " + url, Err: err}
	}
	if !a.Found {
		return frontier.Record{}, false, nil
	}
	var d doc
	if err := jsonUnmarshal(a.Source, &d); err != nil {
		return frontier.Record{}, false, err
	}
	r := d.record()
	if r.State == frontier.Waiting && s.leased(url) {
		r.State = frontier.InFlight
	}
	return r, true, nil
}

// Scan returns the next page of the records q selects, in URL order.
func (s *Store) Scan(q frontier.Query) ([]frontier.Record, string, error) {
	filter := []any{}
	if q.Source != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"source": q.Source}})
	}
	if len(q.States) > 0 {
		var st []int
		for _, x := range q.States {
			if x == frontier.InFlight {
				x = frontier.Waiting
			}
			st = append(st, int(x))
		}
		filter = append(filter, map[string]any{"terms": map[string]any{"state": st}})
	}
	recs, err := s.page(filter, q.After)
	if err != nil {
		return nil, "", &Error{Op: "scan records", Err: err}
	}
	for i := range recs {
		if recs[i].State == frontier.Waiting && s.leased(recs[i].URL) {
			recs[i].State = frontier.InFlight
		}
	}
	next := ""
	if len(recs) == pageSize {
		next = recs[len(recs)-1].URL
	}
	return recs, next, nil
}

// page reads the next pageSize records filter selects after the URL
// after, in URL order.
func (s *Store) page(filter []any, after string) ([]frontier.Record, error) {
	body := map[string]any{"size": pageSize, "sort": []any{map[string]any{"url": "asc"}}, "_source": map[string]any{"excludes": []string{"hist"}},
		"query": map[string]any{"bool": map[string]any{"filter": filter}}}
	if after != "" {
		body["search_after"] = []string{after}
	}
	var ans struct {
		Hits struct {
			Hits []struct {
				Source doc `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	if err := s.do(context.Background(), http.MethodPost, "/"+s.urls+"/_search", body, &ans); err != nil {
		return nil, err
	}
	out := make([]frontier.Record, len(ans.Hits.Hits))
	for i := range ans.Hits.Hits {
		out[i] = ans.Hits.Hits[i].Source.record()
	}
	return out, nil
}

// sweep walks the records q selects a page at a time and applies fn to
// each through change, counting the records it changed.
func (s *Store) sweep(q frontier.Query, fn func(r *frontier.Record) bool) (int, error) {
	// Every change stored before the sweep is to be seen by it: each
	// record is read again before it is changed, but one whose stored
	// state is not yet searchable would not be selected at all.
	if err := s.refresh(context.Background()); err != nil {
		return 0, err
	}
	total := 0
	for {
		recs, next, err := s.Scan(q)
		if err != nil {
			return total, err
		}
		var urls []string
		for i := range recs {
			r := recs[i]
			if r.State != frontier.InFlight && fn(&r) {
				urls = append(urls, r.URL)
			}
		}
		if len(urls) > 0 {
			_, changed, _, err := s.change(urls, func(r *frontier.Record) (bool, error) {
				if s.leased(r.URL) {
					return false, nil
				}
				return fn(r), nil
			})
			if err != nil {
				return total, err
			}
			for _, c := range changed {
				if c {
					total++
				}
			}
		}
		if next == "" {
			s.sched.askLoad()
			return total, nil
		}
		q.After = next
	}
}

// refresh makes every write to the URL index stored so far searchable.
func (s *Store) refresh(ctx context.Context) error {
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_refresh", nil, nil); err != nil {
		return &Error{Op: "refresh", Err: err}
	}
	return nil
}

func (s *Store) requeue(r *frontier.Record, c frontier.Class) {
	r.State, r.Class, r.Reason, r.Cycle = frontier.Waiting, c, "", s.Cycle()
}

// Pending lists the records with a write not yet acknowledged in the
// partitions this process holds: the others' writes are theirs to see
// acknowledged, and those of a process that died are taken over with its
// partitions.
func (s *Store) Pending() ([]frontier.Record, error) {
	parts := s.own.parts()
	if len(parts) == 0 {
		return nil, nil
	}
	// Read at a cycle's start, right after the last cycle's acknowledgements
	// were stored: unrefreshed, the index would still list them pending, and
	// their pages would be fetched and written again.
	if err := s.refresh(context.Background()); err != nil {
		return nil, err
	}
	return s.all("list pending writes", []any{
		map[string]any{"terms": map[string]any{"pending": []string{frontier.PendingIndex, frontier.PendingDelete}}},
		map[string]any{"terms": map[string]any{"part": parts}}})
}

// all reads every record filter selects, a page at a time; op names the
// reading in its error.
func (s *Store) all(op string, filter []any) ([]frontier.Record, error) {
	var out []frontier.Record
	after := ""
	for {
		recs, err := s.page(filter, after)
		if err != nil {
			return nil, &Error{Op: op, Err: err}
		}
		out = append(out, recs...)
		if len(recs) < pageSize {
			return out, nil
		}
		after = out[len(out)-1].URL
	}
}

// Held lists the records of source ("" for every source) whose delete is
// held back, in every partition: the guard that holds them judges a
// source as a whole.
func (s *Store) Held(source string) ([]frontier.Record, error) {
	// Read at a cycle's end, right after its last outcomes were stored.
	if err := s.refresh(context.Background()); err != nil {
		return nil, err
	}
	filter := []any{map[string]any{"terms": map[string]any{"pending": []string{frontier.PendingHold, frontier.PendingHeld}}}}
	if source != "" {
		filter = append(filter, map[string]any{"term": map[string]any{"source": source}})
	}
	return s.all("list held deletes", filter)
}

// MoveHeld moves the held deletes of urls to to (PendingDelete or
// PendingHeld), with ev in the history of each URL moved.
func (s *Store) MoveHeld(urls []string, to string, ev frontier.Event) ([]frontier.Record, error) {
	if to != frontier.PendingDelete && to != frontier.PendingHeld {
		return nil, fmt.Errorf("esfrontier: cannot move a held delete to %q", to)
	}
	return s.changeAll(urls, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
		if !frontier.HeldDelete(r.Pending) || r.Pending == to {
			return false, nil
		}
		r.Pending = to
		note(ev)
		return true, nil
	})
}

// changeAll is changeNoting over any number of URLs, a page at a time; it
// returns the records changed, as stored.
func (s *Store) changeAll(urls []string, fn func(r *frontier.Record, note func(...frontier.Event)) (bool, error)) ([]frontier.Record, error) {
	var out []frontier.Record
	for start := 0; start < len(urls); start += pageSize {
		recs, changed, _, err := s.changeNoting(urls[start:min(start+pageSize, len(urls))], fn)
		if err != nil {
			return out, err
		}
		for i, c := range changed {
			if c {
				out = append(out, recs[i])
			}
		}
	}
	return out, nil
}

// Acknowledge records the index's answers.
func (s *Store) Acknowledge(acks []frontier.Ack) ([]error, error) {
	if len(acks) == 0 {
		return nil, nil
	}
	byURL := make(map[string][]*frontier.Ack, len(acks))
	urls := make([]string, 0, len(acks))
	for i := range acks {
		a := &acks[i]
		if byURL[a.URL] == nil {
			urls = append(urls, a.URL)
		}
		byURL[a.URL] = append(byURL[a.URL], a)
	}
	_, _, errs, err := s.changeNoting(urls, func(r *frontier.Record, note func(...frontier.Event)) (bool, error) {
		for _, a := range byURL[r.URL] {
			if a.Event.Kind != 0 {
				note(a.Event)
			}
			if a.Failed {
				r.Hash = ""
				if !a.Delete && r.State == frontier.Fetched {
					r.State, r.Reason = frontier.Error, a.Reason
				}
				continue
			}
			pending := frontier.PendingIndex
			if a.Delete {
				pending = frontier.PendingDelete
			}
			if r.Pending == pending {
				r.Pending = ""
			}
			r.Indexed = !a.Delete
		}
		return true, nil
	})
	// Recorded or not, the writes are no longer this process's to wait
	// for: one the node could not record stays pending in the store, and
	// its partition's next holder (or the next start) writes it again. A
	// partition kept for it would be kept until this process stops, its
	// hosts unfetched by anyone.
	s.sched.acknowledged(urls)
	if err != nil {
		return nil, err
	}
	byErr := make(map[string]error, len(urls))
	for i, u := range urls {
		byErr[u] = errs[i]
	}
	out := make([]error, len(acks))
	for i := range acks {
		out[i] = byErr[acks[i].URL]
	}
	return out, nil
}

// Refetch forgets the hash of each URL and queues those not waiting as
// Refresh.
func (s *Store) Refetch(urls []string) error {
	for start := 0; start < len(urls); start += pageSize {
		chunk := urls[start:min(start+pageSize, len(urls))]
		_, _, errs, err := s.change(chunk, func(r *frontier.Record) (bool, error) {
			r.Hash = ""
			if r.State != frontier.Waiting {
				s.requeue(r, frontier.Refresh)
			}
			return true, nil
		})
		if err != nil {
			return err
		}
		for _, e := range errs {
			if e != nil && !errors.Is(e, frontier.ErrNotFound) {
				return e
			}
		}
	}
	s.sched.askLoad()
	return nil
}

// requeuePending queues, to be fetched and written again, the pages of
// parts whose document write was not acknowledged: their holder died
// before it heard the index's answer. Pending deletes stay, for the next
// cycle's resume to send.
func (s *Store) requeuePending(ctx context.Context, parts []int) error {
	for {
		body := map[string]any{"size": pageSize, "_source": []string{"url"},
			"query": map[string]any{"bool": map[string]any{"filter": []any{
				map[string]any{"term": map[string]any{"pending": frontier.PendingIndex}},
				map[string]any{"terms": map[string]any{"part": parts}}},
				// Those queued already are done with.
				"must_not": []any{map[string]any{"term": map[string]any{"state": int(frontier.Waiting)}}}}}}
		var ans struct {
			Hits struct {
				Hits []struct {
					Source struct{ URL string } `json:"_source"`
				} `json:"hits"`
			} `json:"hits"`
		}
		if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_search", body, &ans); err != nil {
			return &Error{Op: "list the writes of a dead process", Err: err}
		}
		if len(ans.Hits.Hits) == 0 {
			return nil
		}
		urls := make([]string, len(ans.Hits.Hits))
		for i, h := range ans.Hits.Hits {
			urls[i] = h.Source.URL
		}
		_, _, _, err := s.change(urls, func(r *frontier.Record) (bool, error) {
			if r.Pending != frontier.PendingIndex || r.State == frontier.Waiting {
				return false, nil
			}
			r.Hash = ""
			s.requeue(r, frontier.Refresh)
			return true, nil
		})
		if err != nil {
			return err
		}
		if len(urls) < pageSize {
			return nil
		}
	}
}

// Reapply applies verdicts of the crawl space on known URLs.
func (s *Store) Reapply(verdicts []frontier.Verdict) (dropped, requeued int, err error) {
	if len(verdicts) == 0 {
		return 0, 0, nil
	}
	byURL := make(map[string]*frontier.Verdict, len(verdicts))
	urls := make([]string, 0, len(verdicts))
	for i := range verdicts {
		byURL[verdicts[i].URL] = &verdicts[i]
		urls = append(urls, verdicts[i].URL)
	}
	for start := 0; start < len(urls); start += pageSize {
		chunk := urls[start:min(start+pageSize, len(urls))]
		kind := map[string]int{}
		_, changed, _, err := s.change(chunk, func(r *frontier.Record) (bool, error) {
			v := byURL[r.URL]
			if s.leased(r.URL) {
				return false, nil
			}
			switch {
			case r.State == frontier.Excluded && v.Allowed:
				s.requeue(r, r.Class)
				kind[r.URL] = 1
			case r.State == frontier.Fetched && v.Allowed && v.Refetch:
				r.Hash, r.ETag, r.LastModified = "", "", ""
				s.requeue(r, frontier.Refresh)
				kind[r.URL] = 1
			case r.State != frontier.Excluded && !v.Allowed:
				if r.Indexed || r.Pending == frontier.PendingIndex {
					r.Pending = frontier.PendingDelete
					if v.Hold {
						r.Pending = frontier.PendingHold
					}
				}
				r.State, r.Reason = frontier.Excluded, v.Reason
				kind[r.URL] = 2
			default:
				return false, nil
			}
			return true, nil
		})
		if err != nil {
			return dropped, requeued, err
		}
		for i, c := range changed {
			if c {
				if kind[chunk[i]] == 1 {
					requeued++
				} else {
					dropped++
				}
			}
		}
	}
	s.sched.askLoad()
	return dropped, requeued, nil
}

// Drop excludes the Waiting URLs whose verdicts refuse them.
func (s *Store) Drop(verdicts []frontier.Verdict) (int, error) {
	refused := map[string]string{}
	var urls []string
	for _, v := range verdicts {
		if !v.Allowed {
			refused[v.URL] = v.Reason
			urls = append(urls, v.URL)
		}
	}
	n := 0
	for start := 0; start < len(urls); start += pageSize {
		chunk := urls[start:min(start+pageSize, len(urls))]
		_, changed, _, err := s.change(chunk, func(r *frontier.Record) (bool, error) {
			if r.State != frontier.Waiting || s.leased(r.URL) {
				return false, nil
			}
			r.State, r.Reason = frontier.Excluded, refused[r.URL]
			return true, nil
		})
		if err != nil {
			return n, err
		}
		for _, c := range changed {
			if c {
				n++
			}
		}
	}
	s.sched.dropURLs(refused)
	return n, nil
}

// RequeueDue queues for an aged check the URLs AgedCheckDue selects.
func (s *Store) RequeueDue(source string, olderThan time.Time) (int, error) {
	return s.sweep(frontier.Query{Source: source, States: []frontier.State{frontier.Fetched, frontier.Error}}, func(r *frontier.Record) bool {
		if !frontier.AgedCheckDue(r, olderThan) {
			return false
		}
		s.requeue(r, frontier.Refresh)
		return true
	})
}

// RequeueErrors queues again the URLs in Error, in their own class.
func (s *Store) RequeueErrors(source string) (int, error) {
	return s.sweep(frontier.Query{Source: source, States: []frontier.State{frontier.Error}}, func(r *frontier.Record) bool {
		s.requeue(r, r.Class)
		return true
	})
}

// RequeueIndexed queues again every URL holding a document, its hash and
// validators forgotten.
func (s *Store) RequeueIndexed() (int, error) {
	return s.sweep(frontier.Query{States: []frontier.State{frontier.Fetched}}, func(r *frontier.Record) bool {
		if !r.Indexed && r.Pending == "" {
			return false
		}
		r.Indexed, r.Hash, r.ETag, r.LastModified = false, "", "", ""
		if r.Pending == frontier.PendingIndex {
			r.Pending = ""
		}
		s.requeue(r, frontier.Refresh)
		return true
	})
}

// Orphans makes change to the records of urls it applies to.
func (s *Store) Orphans(urls []string, change frontier.OrphanChange) ([]frontier.Record, error) {
	cycle := s.Cycle()
	out, err := s.changeAll(urls, func(r *frontier.Record, _ func(...frontier.Event)) (bool, error) {
		if r.State == frontier.Waiting {
			return false, nil
		}
		holds := r.State == frontier.Fetched && r.Indexed && r.Pending == ""
		switch change {
		case frontier.OrphanLinked:
			if !r.Orphan {
				return false, nil
			}
			r.Orphan = false
		case frontier.OrphanRevive:
			if r.State != frontier.Excluded || !r.Orphan {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Cycle = frontier.Waiting, "", false, cycle
		case frontier.OrphanKeep:
			if !holds || r.Orphan {
				return false, nil
			}
			r.Orphan = true
		case frontier.OrphanRecheck:
			if !holds {
				return false, nil
			}
			if r.Cycle != cycle {
				r.Orphan = true
				r.State, r.Class, r.Reason, r.Cycle = frontier.Waiting, frontier.Refresh, "", cycle
			} else if r.Orphan {
				return false, nil
			} else {
				r.Orphan = true
			}
		case frontier.OrphanDelete:
			if !holds {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Pending = frontier.Excluded, frontier.ReasonOrphan, true, frontier.PendingDelete
		case frontier.OrphanHold:
			if !holds {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Pending = frontier.Excluded, frontier.ReasonOrphan, true, frontier.PendingHold
		default:
			return false, fmt.Errorf("esfrontier: unknown orphan change %d", change)
		}
		return true, nil
	})
	if len(out) > 0 {
		s.forgetSeen()
		s.sched.askLoad()
	}
	return out, err
}
