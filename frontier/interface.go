package frontier

import (
	"context"
	"time"
)

// Store is what a crawl needs of its state store, grouped by role. Every
// argument and result is a value: no callback runs inside a change, so a
// store on the network (one request per call, leases per host) can
// implement it as well as this package's bbolt Frontier. What is specific
// to a store (opening it, its options, closing it, its own reports) stays
// on the implementation.
type Store interface {
	Scheduler
	Writes
	Scanner
	Linker
	Meta
	Control
}

// Scheduler hands out due URLs and takes back their outcomes, keeping to
// each host's politeness, and queues the URLs found on the way.
type Scheduler interface {
	// Next waits for the next due URL. It returns ErrDone when nothing is
	// waiting and nothing is in flight, ctx's error when ctx ends, and the
	// store's failure once it cannot record outcomes.
	Next(ctx context.Context) (Lease, error)
	// Add queues the items the store does not know and returns how many it
	// queued (see Frontier.Add for the precedence rules).
	Add(items ...Item) (int, error)
	// Exclude records found URLs the crawl space refuses, with reason, and
	// returns how many were new.
	Exclude(reason string, items ...Item) (int, error)
	// Backoff keeps a host from a new lease before until.
	Backoff(hostKey string, until time.Time)
	// Request waits until the host's politeness lets one more request
	// start, one that is no queued URL's (a sitemap or a feed), and takes
	// one of the host's slots for it, as a lease does. done frees the slot
	// and starts the host's delay, as completing a lease does. It returns
	// ctx's error when ctx ends first, and ErrClosed once the store is
	// closed. Next does not wait for such requests: its ErrDone says only
	// that no URL is waiting or leased.
	Request(ctx context.Context, hostKey string) (done func(), err error)
	// Stats are the scheduler's figures, cheap enough for every scrape.
	Stats() Stats
}

// Lease is one URL handed to one worker. Exactly one of CompleteAsync or
// Release ends it; its methods are not safe for concurrent use.
type Lease interface {
	// Item is the URL as it was queued.
	Item() Item
	// Record is the URL's stored state when it was leased (State reads
	// InFlight): validators for a conditional request, error counts,
	// sync bookkeeping.
	Record() Record
	// HostKey is the scheduling key of the URL's host.
	HostKey() string
	// Fetched notes the size and duration of the request made, for the
	// history event of the completion.
	Fetched(bytes int64, took time.Duration)
	// CompleteAsync records the outcome. It frees the host's slot and
	// starts its delay at once and calls done once the outcome is stored,
	// or with the error that kept it out (the URL is then held back until
	// the next cycle). done is called one at a time and must not complete
	// another lease.
	CompleteAsync(o Outcome, done func(error)) error
	// Release gives the URL back untouched (the worker is stopping).
	Release()
}

// Fenced is a Lease that a store shared by several processes may take
// back before it ends: once Fence is done, this process can no longer be
// sure it alone fetches from the URL's host (the hold on the host's share
// of the crawl could not be renewed in time, and another process may take
// it over). The request for the lease must then not start, and one under
// way stops: the worker gives the lease back (Release), and the URL is
// fetched by whoever holds its host next.
type Fenced interface {
	Lease
	Fence() context.Context
}

// Writes keeps the document writes recorded pending (Outcome.Pending)
// until the index acknowledges them, so that none is lost to a crash.
type Writes interface {
	// Pending lists the records with a write not yet acknowledged.
	Pending() ([]Record, error)
	// Acknowledge records the index's answers, in order; errs holds each
	// answer's own refusal (ErrNotFound for a URL the store forgot), err a
	// failure of the store.
	Acknowledge(acks []Ack) (errs []error, err error)
	// Refetch forgets the hash of each URL and queues it again as Refresh
	// unless it is waiting or leased, so its next fetch writes its document
	// whatever it holds. URLs the store does not know are skipped.
	Refetch(urls []string) error
	// Held lists the records of source ("" for every source) whose delete
	// is held back from the index (PendingHold, PendingHeld), whichever
	// process holds their host.
	Held(source string) ([]Record, error)
	// MoveHeld moves the held deletes of urls to PendingDelete (to be
	// sent) or PendingHeld, with ev in each moved URL's history, and
	// returns the records it moved, as stored; URLs whose delete is not
	// held, or is held as to already, are left as they are.
	MoveHeld(urls []string, to string, ev Event) ([]Record, error)
}

// Scanner reads the store page by page and applies decisions made from
// what it read: the walks of reapply, orphans, status and maintenance.
type Scanner interface {
	// Get returns a URL's record (InFlight when leased) and whether the
	// store knows it.
	Get(url string) (Record, bool, error)
	// Scan returns the next page of the records q selects, in the store's
	// own order (no caller may rely on one), and the q.After of the page
	// after it: "" when there is none.
	Scan(q Query) (recs []Record, next string, err error)
	// Reapply applies verdicts of the crawl space on known URLs (see
	// Verdict.Changes) and returns how many URLs it excluded and queued.
	Reapply(verdicts []Verdict) (dropped, requeued int, err error)
	// Drop excludes the Waiting URLs whose verdicts refuse them, with
	// their reasons, and takes them out of their queues; leased ones stay
	// with their workers.
	Drop(verdicts []Verdict) (int, error)
	// RequeueDue queues for an aged check, as Refresh, the URLs of source
	// ("" for all) that AgedCheckDue selects.
	RequeueDue(source string, olderThan time.Time) (int, error)
	// RequeueErrors queues again the URLs of source ("" for all) in Error.
	RequeueErrors(source string) (int, error)
	// RequeueIndexed queues again every URL holding a document, with its
	// hash and validators forgotten: a rebuild of the index.
	RequeueIndexed() (int, error)
}

// Linker keeps the pages' outlinks and marks the orphans found with them.
type Linker interface {
	// Links returns the outlinks stored under key, and whether any are.
	Links(key string) ([]uint64, bool, error)
	// SetLinks stores links under key, which needs no record.
	SetLinks(key string, links []uint64) error
	// Reach walks the stored outlinks from roots.
	Reach(roots []uint64) (*Reached, error)
	// Orphans makes change to each of urls it applies to (see
	// OrphanChange) and returns the records it changed, as stored.
	Orphans(urls []string, change OrphanChange) ([]Record, error)
}

// ReachCounter is a Linker whose store counts the changes an orphan walk
// can see (see Frontier.ReachGeneration), so that a walk of a store
// unchanged since one that found nothing can be skipped.
type ReachCounter interface {
	ReachGeneration() (uint64, error)
}

// Meta holds the cycle number and small values such as config
// fingerprints.
type Meta interface {
	// Cycle is the current discovery cycle; BeginCycle starts the next.
	Cycle() uint64
	BeginCycle() (uint64, error)
	// GetMeta returns the value under key, nil when absent; PutMeta
	// stores it (nil deletes it).
	GetMeta(key string) ([]byte, error)
	PutMeta(key string, value []byte) error
}

// Control is what an operator's requests change at once (the control API,
// docs/api.md): URLs queued or taken out of the crawl, sources paused.
type Control interface {
	// Pause keeps the URLs of the sources named from new leases, until a
	// later Pause leaves them out: they stay Waiting, and a cycle ends
	// without them. Leases already out run to their end. A source that
	// leaves the list is due again at once, in the cycle running.
	Pause(sources []string) error
	// Recrawl queues each known URL at once in class, to be fetched whole:
	// its hash forgotten, Waiting in class whatever its state (moved to
	// class when it waited in another). A URL leased is queued again when
	// its lease ends, or its error is ErrLeased where the store cannot do
	// that. errs holds each URL's refusal (ErrNotFound for one the store
	// does not know), err a failure of the store.
	Recrawl(urls []string, class Class) (errs []error, err error)
	// Remove takes each known URL out of the crawl: Excluded with reason,
	// and the delete of its document marked pending (Pending "delete",
	// sent by the caller) when it holds one or has one on its way. recs
	// are the records as stored; errs each URL's refusal: ErrNotFound, or
	// ErrLeased while a worker holds it (its outcome is on its way).
	Remove(urls []string, reason string) (recs []Record, errs []error, err error)
}

// Duplicates keeps, per source, the groups of URLs whose pages had the same
// content, so that one document stands for each group. A group is named
// by its content key (Outcome.Content, the content hash of the pages);
// each member carries the claim its own last outcome made (Outcome.Claim):
// 0 when it left the group's document to another URL, n > 0 when it wrote
// the group's document (the provider's fingerprint of the members it
// listed: the store only keeps it). The provider chooses the
// primary and writes the documents; the store only keeps the groups.
//
// Completing a lease regroups its URL in the completion's transaction: a
// Waiting outcome leaves the URL's group as it was; any other outcome takes
// the URL out of its group and, when it is Fetched with Content set, puts
// it in the group of (its source, Content) with Claim. Nothing else changes
// a membership: Reapply, Orphans and Refetch leave them alone, and Reclaim
// changes only the claim of a member.
//
// A store that does not implement Duplicates has no groups, and every URL
// is its own document, as with keep_duplicates.
type Duplicates interface {
	// SameContent lists the members of the group (source, content) in
	// URL byte order, leaving out URLs whose record is in Error or
	// Excluded (a change without an outcome, such as Reapply or an
	// orphan's deletion, left them in the group); at most 1,000 are read.
	SameContent(source, content string) ([]Member, error)
	// ContentOf is the content key of url's group and url's claim in it;
	// "" when url is in none.
	ContentOf(url string) (content string, claim int, err error)
	// Reclaim makes each change of rs (see Reclaim) in one change of the
	// store, each with its write recorded pending as an outcome's would be
	// (Writes), and returns each one's refusal, nil when it was made:
	// ErrNotFound, ErrLeased (the URL's outcome will settle its group),
	// ErrStale (the URL is no longer in the group with the claim read, or
	// left the crawl) or ErrUnsettled (its document is not indexed as its
	// claim says, or a write of it is pending).
	Reclaim(rs []Reclaim) ([]error, error)
}

// Reclaim is a new claim of a member of a group of duplicates, with the
// write of its document that makes it true, decided by the crawler from
// the group as the store holds it instead of by fetching the page again:
// the primary's document updated in place with the group's list
// (PendingIndex), or a member that no longer is the primary losing its
// document (PendingDelete, To 0).
type Reclaim struct {
	URL, Content string
	// From is the claim read; the change is made only while the URL is in
	// the group of Content with that claim. To is the claim made.
	From, To int
	// Hash is the hash of the document once written (Record.Hash).
	Hash string
	// Pending is the write, PendingIndex or PendingDelete, of the
	// document DocID, or PendingHold for a delete held back until the end
	// of the cycle (its source's hold_deletes). An index needs the document
	// indexed with no write pending (it changes fields of it), a delete no
	// write pending.
	Pending, DocID string
	// Detail goes with the write's history event.
	Detail string
}

// Event is the history event of r: its write sent, or its delete held.
func (r *Reclaim) Event() Event {
	if r.Pending == PendingHold {
		return Event{Kind: EventDeleteHeld, Reason: PendingHold, Detail: HoldDetail}
	}
	return Event{Kind: EventWriteSent, Reason: r.Pending, Detail: r.Detail}
}

// GroupReader is what a store implementing Duplicates may add for the
// commonest outcome of a re-crawl, an unchanged page (a 304), which stays
// in its group and settles it once stored: its group read once, before
// its outcome, instead of once before and once after. The outcome leaves
// the group as it was, so the group read before is the group after, but
// for the URL's own record, whose state its outcome sets.
type GroupReader interface {
	// GroupOf is ContentOf(rec.URL) and SameContent(rec.Source, its
	// content) in one read, the URL listed whatever its record's state; ""
	// and no members when it is in no group. rec is the URL's record as
	// its lease gave it (Lease.Record), which names the URL's group: only
	// the URL's own outcomes move it, and they need the lease, so the
	// group's key is not read again.
	GroupOf(rec Record) (content string, claim int, members []Member, err error)
}

// Member is a URL of a group of duplicates with its claim (see Duplicates).
type Member struct {
	URL   string
	Claim int
}

// Reports are the store's answers for status, no part of a crawl: a
// URL's history and what the budgets count.
type Reports interface {
	History(url string) ([]Event, error)
	Usage(source string) (Usage, error)
	HostUsage(source, host string) (HostUsage, bool, error)
	HostUsages(source string) ([]HostUsage, error)
}

var (
	_ Store       = (*Frontier)(nil)
	_ Reports     = (*Frontier)(nil)
	_ Duplicates  = (*Frontier)(nil)
	_ GroupReader = (*Frontier)(nil)
)
