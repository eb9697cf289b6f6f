package provider

import (
	"context"
	"errors"
	"hash/maphash"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/sink"
)

// The write protocol keeps the index in step with the store across
// crashes and outages. A document write is decided with a lease's outcome
// and recorded pending in the store with it (write.pend); it is handed to
// the sink only once that outcome is stored, so the acknowledgement always
// finds it recorded (writer.send); the sink's answers are recorded in
// batches (writer.result); what a run left pending is sent again when the
// next cycle starts (writer.resume); and a cycle ends once its writes have
// landed and are recorded (writer.settle).

// Pending writes recorded on a URL until the sink acknowledges them.
const (
	pendingIndex  = frontier.PendingIndex
	pendingDelete = frontier.PendingDelete
)

// write is one document write: an index of doc, an update of the fields
// of document id (a group's list rewritten), or a delete by id.
type write struct {
	del     bool
	id, url string
	source  string
	doc     *docfields.Document
	fields  []byte
	// hold holds a delete back from the sink until the end of its cycle
	// (see holdDelete); why says, for the URL's history, why one is sent.
	hold bool
	why  string
}

// deletion is the delete of the document rec holds or has on its way.
func deletion(rec frontier.Record) *write {
	id := rec.DocID
	if id == "" {
		id = docfields.ID(rec.URL)
	}
	return &write{del: true, id: id, url: rec.URL, source: rec.Source}
}

// pend records w as pending on the outcome that decides it, with its
// history event: stored with the outcome, it survives a crash.
func (w *write) pend(o *frontier.Outcome) {
	o.Pending, o.DocID = pendingIndex, w.id
	if w.del {
		o.Pending = pendingDelete
	}
	if w.hold {
		o.Pending = frontier.PendingHold
		o.History = append(o.History, frontier.Event{Kind: frontier.EventDeleteHeld, Reason: o.Pending, Detail: frontier.HoldDetail})
		return
	}
	if w.doc != nil {
		// The document waits in memory for the outcome's commit.
		o.Holds = w.doc.Size()
	}
	o.History = append(o.History, frontier.Event{Kind: frontier.EventWriteSent, Reason: o.Pending, Detail: w.why})
}

// writer owns the write protocol between the store and the sink.
type writer struct {
	store  frontier.Writes
	sink   sink.Sink
	log    *slog.Logger
	report func() *Report // the current cycle's

	acks *ackQueue
	// storeFailed is set once acknowledgements met a broken store.
	storeFailed atomic.Bool
	// unsent counts writes left pending when the crawl stopped, for one
	// log line at close.
	unsent atomic.Int64

	mu sync.Mutex
	// ctx is the running crawl's, for the writes sent from completion
	// callbacks: a crawl that stops stops waiting on the sink.
	ctx context.Context
}

func newWriter(store frontier.Writes, log *slog.Logger, report func() *Report) *writer {
	w := &writer{store: store, log: log, report: report, ctx: context.Background()}
	w.acks = newAckQueue(w.acknowledge)
	return w
}

// begin makes ctx the context of the writes sent from now on.
func (wr *writer) begin(ctx context.Context) {
	wr.mu.Lock()
	wr.ctx = ctx
	wr.mu.Unlock()
}

func (wr *writer) context() context.Context {
	wr.mu.Lock()
	defer wr.mu.Unlock()
	return wr.ctx
}

// send hands a recorded write to the sink. It runs on the store's
// completion callback, so it waits on a full sink only while the crawl
// runs: a stopped crawl leaves the write pending for the next one.
func (wr *writer) send(w *write) {
	ctx := wr.context()
	err := wr.sendCtx(ctx, w)
	if err == nil {
		return
	}
	// The write stays pending in the store and is sent again by the next cycle.
	if ctx.Err() != nil {
		wr.unsent.Add(1) // stopping: counted in one line at close
		return
	}
	wr.log.Warn("sink write failed", "url", w.url, "source", w.source, "delete", w.del, "err", err)
}

// sendCtx is the one path of every write to the sink: the report learns
// the URL's source, for the acknowledgement.
func (wr *writer) sendCtx(ctx context.Context, w *write) error {
	wr.report().expect(w.url, w.source)
	switch {
	case w.del:
		return wr.sink.Delete(ctx, w.id, w.url)
	case w.fields != nil:
		return wr.sink.Update(ctx, w.id, w.url, w.fields)
	}
	return wr.sink.Index(ctx, w.doc)
}

// result counts an acknowledgement in the current report and queues it to
// be recorded in the store.
func (wr *writer) result(res sink.Result) {
	if res.Outcome == sink.Unsent {
		// Nothing changed in the index: the write stays pending.
		wr.unsent.Add(1)
		return
	}
	src := wr.report().sinkResult(res)
	if res.Outcome == sink.Failed {
		wr.log.Warn("index write failed", "url", res.URL, "source", src, "reason", "index_failed",
			"status", res.Status, "detail", res.Reason, "delete", res.Delete)
	} else if res.NoVectors {
		wr.log.Warn("document written without its vectors", "url", res.URL, "source", src, "reason", reasonEmbeddingFailed,
			"detail", res.Reason)
	} else if wr.log.Enabled(context.Background(), slog.LevelDebug) {
		wr.log.Debug("index write acknowledged", "url", res.URL, "source", src, "outcome", string(res.Outcome), "status", res.Status)
	}
	wr.acks.add(res, src)
}

// acknowledge records sink outcomes on their URLs, in one change of the
// store: the document is indexed or gone, and the pending write done, or
// refused for good and left pending (see frontier.Ack).
func (wr *writer) acknowledge(batch []ack) {
	acks := make([]frontier.Ack, len(batch))
	for i, a := range batch {
		acks[i] = frontier.Ack{URL: a.res.URL, Delete: a.res.Delete, Failed: a.res.Outcome == sink.Failed,
			Reason: reasonIndexFailed, Event: ackEvent(a.res)}
		if a.res.NoVectors {
			// Searchable by words, but the write stays pending: the next
			// cycle writes it again, with its vectors.
			acks[i].Failed, acks[i].Reason = true, reasonEmbeddingFailed
		}
	}
	errs, txErr := wr.store.Acknowledge(acks)
	var broken *frontier.StoreError
	if errors.As(txErr, &broken) {
		// The store takes nothing more and the crawl stops on it; the writes
		// stay pending on disk as they were. Said once, not per write.
		if !wr.storeFailed.Swap(true) {
			wr.log.Error("cannot record index acknowledgements: they are sent again on the next start", "count", len(batch), "err", txErr)
		}
		return
	}
	for i, a := range batch {
		err := txErr
		if err == nil {
			err = errs[i]
		}
		if err != nil && !errors.Is(err, frontier.ErrNotFound) {
			wr.log.Error("cannot record index acknowledgement", "url", a.res.URL, "source", a.src, "outcome", string(a.res.Outcome), "err", err)
		}
	}
}

// reasonIndexFailed is the reason of a write the index rejected for good:
// a page whose document was refused is in error with it, which status
// counts and clear-errors queues again.
const reasonIndexFailed = "index_failed"

// reasonEmbeddingFailed is the reason of a document written without its
// vectors (embeddings.on_failure: index_without_vectors): an error of the
// page until a later cycle writes it with them.
const reasonEmbeddingFailed = "embedding_failed"

// ackEvent is the history event of a sink acknowledgement.
func ackEvent(res sink.Result) frontier.Event {
	switch {
	case res.Outcome == sink.Failed:
		return frontier.Event{Kind: frontier.EventWriteFailed, Reason: reasonIndexFailed, Status: res.Status, Detail: res.Reason}
	case res.NoVectors:
		return frontier.Event{Kind: frontier.EventWriteDone, Reason: string(res.Outcome), Status: res.Status,
			Detail: "written without vectors: " + res.Reason}
	}
	return frontier.Event{Kind: frontier.EventWriteDone, Reason: string(res.Outcome), Status: res.Status}
}

// resume sends again the writes a previous run handed to the sink but
// never saw land (a crash, an outage that outlasted it, a stop) and those
// the index rejected for good: deletes by id; documents by refetching
// their URL, whose hash is forgotten so the page is written whatever it
// holds.
func (wr *writer) resume(ctx context.Context) error {
	recs, err := wr.store.Pending()
	if err != nil {
		return err
	}
	var refetch []string
	for _, r := range recs {
		if r.Pending == pendingDelete {
			if err := wr.sendCtx(ctx, deletion(r)); err != nil {
				return err
			}
			continue
		}
		refetch = append(refetch, r.URL)
	}
	if err := wr.store.Refetch(refetch); err != nil {
		return err
	}
	if len(recs) > 0 {
		wr.log.Info("unacknowledged writes resumed", "count", len(recs))
	}
	return nil
}

// settle waits, within ctx, for the writes sent to land, and returns once
// every acknowledgement received is recorded.
func (wr *writer) settle(ctx context.Context) error {
	err := wr.sink.Flush(ctx)
	wr.acks.wait()
	return err
}

// close lets the sink land the writes it holds, within ctx, and records
// their acknowledgements; writes that have not landed stay pending for the
// next start.
func (wr *writer) close(ctx context.Context) error {
	err := wr.sink.Close(ctx)
	wr.acks.close()
	if n := wr.unsent.Load(); n > 0 {
		wr.log.Info("index writes left pending for the next start", "count", n)
	}
	return err
}

// ackers is how many goroutines record acknowledgements in the state store.
// The sink reports outcomes one at a time; recorded one after another each
// would wait for its own disk sync, while recorded side by side the store's
// group commit syncs many at once. Each goroutine also takes every outcome
// already waiting for it, up to ackBatch, into one change of the store.
const (
	ackers   = 16
	ackBatch = 64
)

// ackQueue records acknowledgements concurrently, keeping the order of the
// ones for the same URL (an index then a delete must land in that order):
// a URL always goes to the same goroutine.
type ackQueue struct {
	seed    maphash.Seed
	lanes   [ackers]chan ack
	pending sync.WaitGroup
	done    sync.WaitGroup
}

type ack struct {
	res sink.Result
	src string
}

func newAckQueue(record func([]ack)) *ackQueue {
	q := &ackQueue{seed: maphash.MakeSeed()}
	for i := range q.lanes {
		q.lanes[i] = make(chan ack, 256)
		q.done.Go(func() {
			batch := make([]ack, 0, ackBatch)
			for a := range q.lanes[i] {
				batch = append(batch[:0], a)
			more:
				for len(batch) < ackBatch {
					select {
					case a, ok := <-q.lanes[i]:
						if !ok {
							break more
						}
						batch = append(batch, a)
					default:
						break more
					}
				}
				record(batch)
				q.pending.Add(-len(batch))
			}
		})
	}
	return q
}

func (q *ackQueue) add(res sink.Result, src string) {
	q.pending.Add(1)
	q.lanes[maphash.String(q.seed, res.URL)%ackers] <- ack{res, src}
}

// wait returns when every acknowledgement added so far is recorded.
func (q *ackQueue) wait() { q.pending.Wait() }

// close stops the goroutines after recording what is queued.
func (q *ackQueue) close() {
	for _, l := range q.lanes {
		close(l)
	}
	q.done.Wait()
}

// unindex is the delete of the URL's document, if one was indexed or is on
// its way.
func unindex(rec frontier.Record) *write {
	if !rec.Indexed && rec.Pending == "" {
		return nil
	}
	return deletion(rec)
}
