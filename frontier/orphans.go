package frontier

// ReasonOrphan is the reason of a URL excluded for being an orphan (see
// Record.Orphan).
const ReasonOrphan = "orphan"

// OrphanChange is what Orphans does to a page the walk over the stored
// links (Reach) found. Each is checked against the record as stored when
// it is made, since the walk and the change are not one transaction:
// those that change an orphan apply only while it holds a document
// (Fetched, Indexed, nothing pending).
type OrphanChange uint8

const (
	// OrphanLinked unmarks a marked page a link reaches again.
	OrphanLinked OrphanChange = iota + 1
	// OrphanRevive queues again, in the current cycle, a page excluded as
	// an orphan that a link reaches again.
	OrphanRevive
	// OrphanKeep marks an orphan, with an event the first time.
	OrphanKeep
	// OrphanRecheck marks an orphan and queues it as Refresh in the
	// current cycle, unless it was fetched in it already.
	OrphanRecheck
	// OrphanDelete excludes an orphan with ReasonOrphan and records the
	// deletion of its document as a pending write (PendingDelete).
	OrphanDelete
	// OrphanHold is OrphanDelete with the deletion held back
	// (PendingHold), for the caller to send or hold at the end of its
	// cycle.
	OrphanHold
)

// Orphans makes change to the records of urls, in write transactions of
// up to writeChunk URLs, and returns the records it changed, as stored.
// Waiting URLs are left alone: a worker may hold them.
func (f *Frontier) Orphans(urls []string, change OrphanChange) ([]Record, error) {
	return f.updateEach(urls, func(r *Record) (bool, []Event) {
		holds := r.State == Fetched && r.Indexed && r.Pending == ""
		switch change {
		case OrphanLinked:
			if !r.Orphan {
				return false, nil
			}
			r.Orphan = false
			return true, []Event{{Kind: EventOrphan, Reason: "linked"}}
		case OrphanRevive:
			if r.State != Excluded || !r.Orphan {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Cycle = Waiting, "", false, f.Cycle()
			return true, []Event{{Kind: EventRequeued, Class: r.Class, Reason: "orphan_linked"}}
		case OrphanKeep:
			if !holds || r.Orphan {
				return false, nil
			}
			r.Orphan = true
			return true, []Event{{Kind: EventOrphan, Reason: "kept"}}
		case OrphanRecheck:
			if !holds {
				return false, nil
			}
			if cur := f.Cycle(); r.Cycle != cur {
				r.Orphan = true
				r.State, r.Class, r.Reason, r.Cycle = Waiting, Refresh, "", cur
				return true, []Event{{Kind: EventOrphan, Reason: "recheck"}}
			}
			if r.Orphan {
				return false, nil
			}
			r.Orphan = true
			return true, []Event{{Kind: EventOrphan, Reason: "kept"}}
		case OrphanDelete:
			if !holds {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Pending = Excluded, ReasonOrphan, true, PendingDelete
			return true, []Event{{Kind: EventOrphan, Reason: "deleted"},
				{Kind: EventWriteSent, Reason: PendingDelete}}
		case OrphanHold:
			if !holds {
				return false, nil
			}
			r.State, r.Reason, r.Orphan, r.Pending = Excluded, ReasonOrphan, true, PendingHold
			return true, []Event{{Kind: EventOrphan, Reason: "deleted"},
				{Kind: EventDeleteHeld, Reason: PendingHold, Detail: HoldDetail}}
		}
		return false, nil
	})
}
