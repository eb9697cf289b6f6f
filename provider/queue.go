package provider

import (
	"context"
	"errors"
	"sync"
	"time"
)

// item is one URL waiting to be fetched.
type item struct {
	url    string
	source *source
	depth  int
	host   string // scheme://host:port, the politeness key
}

// errCycleDone tells a worker that nothing is waiting and nothing is in
// flight: the cycle is over.
var errCycleDone = errors.New("cycle done")

// queue hands out items so that no host has more than its parallel limit in
// flight and each host rests for its delay after a load. Hosts take turns,
// so one big site cannot starve a small one.
type queue struct {
	mu       sync.Mutex
	wake     chan struct{} // closed and replaced whenever something changes
	hosts    map[string]*hostQueue
	ready    []*hostQueue // round-robin order of hosts with waiting items
	seen     map[string]struct{}
	waiting  int
	inflight int
}

type hostQueue struct {
	key         string
	items       []item
	active      int
	maxParallel int
	delay       time.Duration
	nextAt      time.Time
	queued      bool // in ready
}

func newQueue() *queue {
	return &queue{wake: make(chan struct{}), hosts: map[string]*hostQueue{}, seen: map[string]struct{}{}}
}

func (q *queue) broadcast() {
	close(q.wake)
	q.wake = make(chan struct{})
}

// markSeen records a URL as handled in this cycle without queueing it (a
// redirect target, say); it reports whether the URL was new.
func (q *queue) markSeen(url string) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.seen[url]; ok {
		return false
	}
	q.seen[url] = struct{}{}
	return true
}

// add queues it unless its URL was already seen in this cycle.
func (q *queue) add(it item, maxParallel int, delay time.Duration) bool {
	q.mu.Lock()
	defer q.mu.Unlock()
	if _, ok := q.seen[it.url]; ok {
		return false
	}
	q.seen[it.url] = struct{}{}
	h, ok := q.hosts[it.host]
	if !ok {
		h = &hostQueue{key: it.host, maxParallel: max(maxParallel, 1), delay: delay}
		q.hosts[it.host] = h
	}
	h.items = append(h.items, it)
	q.waiting++
	if !h.queued {
		h.queued = true
		q.ready = append(q.ready, h)
	}
	q.broadcast()
	return true
}

// next blocks until an item may be fetched, the cycle is done, or ctx ends.
func (q *queue) next(ctx context.Context) (item, error) {
	for {
		q.mu.Lock()
		if q.waiting == 0 && q.inflight == 0 {
			q.mu.Unlock()
			return item{}, errCycleDone
		}
		now := time.Now()
		var soonest time.Time
		for i, h := range q.ready {
			if h.active >= h.maxParallel {
				continue
			}
			if now.Before(h.nextAt) {
				if soonest.IsZero() || h.nextAt.Before(soonest) {
					soonest = h.nextAt
				}
				continue
			}
			it := h.items[0]
			h.items[0] = item{}
			h.items = h.items[1:]
			h.active++
			q.waiting--
			q.inflight++
			// Move the host to the back so the others get their turn.
			q.ready = append(q.ready[:i], q.ready[i+1:]...)
			if len(h.items) > 0 {
				q.ready = append(q.ready, h)
			} else {
				h.queued = false
			}
			q.mu.Unlock()
			return it, nil
		}
		wake := q.wake
		q.mu.Unlock()
		var timer *time.Timer
		var fire <-chan time.Time
		if !soonest.IsZero() {
			timer = time.NewTimer(time.Until(soonest))
			fire = timer.C
		}
		select {
		case <-ctx.Done():
			return item{}, ctx.Err()
		case <-wake:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

// done frees the item's host slot and starts the host's rest.
func (q *queue) done(it item) {
	q.mu.Lock()
	defer q.mu.Unlock()
	h := q.hosts[it.host]
	h.active--
	q.inflight--
	if h.delay > 0 {
		h.nextAt = time.Now().Add(h.delay)
	}
	q.broadcast()
}
