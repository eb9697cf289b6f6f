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
		if r.Pending == "index" {
			r.Pending = ""
		}
		return true, requeue(w, key, r, Refresh, eff, "rebuild")
	})
}

// Verdict is what the current crawl space says of a known URL.
type Verdict struct {
	Allowed bool
	Reason  string // why it is not allowed
	// Refetch asks for an allowed Fetched URL to be fetched again with its
	// hash forgotten: its document changed meaning (killed, now noindex by
	// a rule, a new add_meta).
	Refetch bool
}

// Reapply re-decides every known URL that is not leased against the
// current crawl space (a configuration change): a Fetched, Error or Waiting
// URL that no longer belongs becomes Excluded with the reason, and if it
// holds a document that document is marked for deletion (Pending
// "delete", sent by the caller through Pending); an Excluded URL that now
// belongs is queued again in its class, and a Fetched URL whose verdict
// asks for it is queued to be fetched and written again. decide runs inside write
// transactions and must not call the Frontier.
func (f *Frontier) Reapply(decide func(Record) Verdict) (dropped, requeued int, err error) {
	_, err = f.sweep(1<<Fetched|1<<Error|1<<Waiting|1<<Excluded, func(w *wtx, key []byte, r *Record, cl *claims, eff *effects) (bool, error) {
		v := decide(*r)
		switch {
		case r.State == Excluded && v.Allowed:
			requeued++
			return true, requeue(w, key, r, r.Class, eff, "config_changed")
		case r.State == Fetched && v.Allowed && v.Refetch:
			r.Hash, r.ETag, r.LastModified = "", "", ""
			requeued++
			return true, requeue(w, key, r, Refresh, eff, "config_changed")
		case r.State != Excluded && !v.Allowed:
			if r.State == Waiting {
				if !cl.take(w, r) {
					return false, nil // leased meanwhile: its worker decides it
				}
				if err := w.dequeue(r); err != nil {
					return false, err
				}
			}
			had := r.Pending != ""
			if r.Indexed || r.Pending == "index" {
				r.Pending = "delete"
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
