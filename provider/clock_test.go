package provider_test

import (
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/provider"
)

// movedClock is real time that a test moves on: the waits of a crawl
// (backoffs, politeness, leases) pass as they do in production, while a
// max_age passes when the test says so rather than after a sleep. The
// project's fakeclock stands still, which would hold every backoff the
// store schedules forever.
type movedClock struct{ ahead atomic.Int64 }

func (m *movedClock) Now() time.Time { return time.Now().Add(time.Duration(m.ahead.Load())) }

// clocks holds each test's clock, shared by every crawler of the test:
// a crawler built after another reads what the first stamped.
var clocks struct {
	sync.Mutex
	of map[testing.TB]*movedClock
}

// clockOf is t's clock, made at its first use and dropped when t ends.
func clockOf(t testing.TB) *movedClock {
	clocks.Lock()
	defer clocks.Unlock()
	if clocks.of == nil {
		clocks.of = map[testing.TB]*movedClock{}
	}
	m := clocks.of[t]
	if m == nil {
		m = &movedClock{}
		clocks.of[t] = m
		t.Cleanup(func() {
			clocks.Lock()
			delete(clocks.of, t)
			clocks.Unlock()
		})
	}
	return m
}

// onTestClock puts c on t's clock; it returns c.
func onTestClock(t testing.TB, c *provider.Crawler) *provider.Crawler {
	provider.SetClock(c, clockOf(t).Now)
	return c
}

// letMaxAgePass moves t's clock past a max_age of 1ms, so every page a
// crawler on it has checked is due.
func letMaxAgePass(t testing.TB) { clockOf(t).ahead.Add(int64(5 * time.Millisecond)) }
