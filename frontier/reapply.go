package frontier

// RequeueIndexed queues again, as Refresh, every Fetched URL that holds a
// document or has a write on its way, and forgets its hash, validators and
// indexed mark, so its next fetch is unconditional and writes it whatever it
// holds. It rebuilds a new physical index from the URLs the store knows.
func (f *Frontier) RequeueIndexed() (int, error) {
	return f.sweep(1<<Fetched, func(w *wtx, key []byte, r *Record, _ *claims, eff *effects) (bool, error) {
		if !r.Indexed && r.Pending == "" {
			return false, nil
		}
		r.Indexed, r.Hash, r.ETag, r.LastModified = false, "", "", ""
		if r.Pending == PendingIndex {
			r.Pending = ""
		}
		return true, requeue(w, key, r, Refresh, eff, "rebuild")
	})
}

// Verdict is what the current crawl space says of a known URL.
type Verdict struct {
	URL     string
	Allowed bool
	Reason  string // why it is not allowed
	// Refetch asks for an allowed Fetched URL to be fetched again with its
	// hash forgotten: its document changed meaning (killed, now noindex by
	// a rule, a new add_meta).
	Refetch bool
	// Hold holds back the delete of the document of a URL the verdict
	// refuses (PendingHold instead of PendingDelete), for the caller to
	// send or hold at the end of its cycle.
	Hold bool
}

// Changes says whether Reapply would change r with v: a URL that left the
// crawl space (not Excluded already), an Excluded one that entered it, a
// Fetched one to fetch again. The caller that scanned r passes on only the
// verdicts that change something.
func (v *Verdict) Changes(r *Record) bool {
	switch {
	case r.State == Excluded:
		return v.Allowed
	case !v.Allowed:
		return true
	}
	return r.State == Fetched && v.Refetch
}

// Reapply applies the verdicts of the current crawl space (a configuration
// change) to the URLs they name that are not leased: a Fetched, Error or
// Waiting URL that no longer belongs becomes Excluded with the reason, and
// if it holds a document that document is marked for deletion (Pending
// "delete", sent by the caller through Pending, or "hold" when the verdict
// holds it back); an Excluded URL that now
// belongs is queued again in its class, and a Fetched URL whose verdict
// asks for it is queued to be fetched and written again. Each URL is
// judged as it is stored when it is changed. URLs without a verdict stay as
// they are.
func (f *Frontier) Reapply(verdicts []Verdict) (dropped, requeued int, err error) {
	if len(verdicts) == 0 {
		return 0, 0, nil
	}
	byURL := make(map[string]*Verdict, len(verdicts))
	for i := range verdicts {
		byURL[verdicts[i].URL] = &verdicts[i]
	}
	return f.reapply(func(r Record) Verdict {
		if v := byURL[r.URL]; v != nil {
			return *v
		}
		return Verdict{Allowed: r.State != Excluded} // no change
	})
}

// reapply re-decides every known URL that is not leased with decide, which
// runs inside write transactions and must not call the Frontier.
func (f *Frontier) reapply(decide func(Record) Verdict) (dropped, requeued int, err error) {
	_, err = f.sweep(1<<Fetched|1<<Error|1<<Waiting|1<<Excluded, func(w *wtx, key []byte, r *Record, cl *claims, eff *effects) (bool, error) {
		v := decide(*r)
		switch {
		case r.State == Excluded && v.Allowed:
			requeued++
			return true, requeue(w, key, r, r.Class, eff, "config_changed")
		case r.State == Fetched && v.Allowed && v.Refetch:
			if !cl.take(w, r) {
				return false, nil // leased for its aged check: its worker decides it
			}
			r.Hash, r.ETag, r.LastModified = "", "", ""
			requeued++
			return true, requeue(w, key, r, Refresh, eff, "config_changed")
		case r.State != Excluded && !v.Allowed:
			if !cl.take(w, r) {
				return false, nil // leased meanwhile: its worker decides it
			}
			if r.State == Waiting {
				if err := w.dequeue(r); err != nil {
					return false, err
				}
			}
			had := r.Pending != ""
			if r.Indexed || r.Pending == PendingIndex {
				r.Pending = PendingDelete
				if v.Hold {
					r.Pending = PendingHold
				}
			}
			r.State, r.Reason, r.qseq = Excluded, v.Reason, 0
			dropped++
			if err := w.put(key, r, had); err != nil {
				return false, err
			}
			return true, w.sweepEvent(key, Event{Kind: EventDropped, Reason: v.Reason, Detail: "config_changed"})
		}
		return false, nil
	})
	return dropped, requeued, err
}
