package provider

import (
	"hash/maphash"
	"sync"

	"github.com/crawlspace/crawlspace/sink"
)

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
