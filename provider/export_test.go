package provider

import (
	"slices"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// Timing holds the crawler's waits that tests shorten; a zero field keeps
// the current value.
type Timing struct {
	RetryBase   time.Duration // first backoff after a temporary error
	RobotsRetry time.Duration // first wait before an unreachable robots.txt is tried again
	Checkpoint  time.Duration // how often a running crawl re-reads its reject lists
	CloseGrace  time.Duration // how long Close waits for the sink's writes to land
	ReadGrace   time.Duration // how long a document reader has to return past documents.timeout
}

// SetTiming changes c's waits. Call it before c's first Crawl; other
// crawlers keep theirs, so the test may run in parallel.
func SetTiming(c *Crawler, tm Timing) {
	if tm.RetryBase > 0 {
		c.timing.retryBase = tm.RetryBase
	}
	if tm.RobotsRetry > 0 {
		c.timing.robotsRetry = tm.RobotsRetry
		c.robots = c.newRobots()
	}
	if tm.Checkpoint > 0 {
		c.timing.checkpoint = tm.Checkpoint
	}
	if tm.CloseGrace > 0 {
		c.timing.closeGrace = tm.CloseGrace
	}
	if tm.ReadGrace > 0 {
		c.timing.readGrace = tm.ReadGrace
		for _, src := range c.sources {
			for _, x := range src.extractors.byType {
				if d, ok := x.(*docExtractor); ok {
					d.grace = tm.ReadGrace
				}
			}
		}
	}
}

// WrapStore puts wrap(store) between the crawler and its state store:
// everything a crawl asks of the store goes through what it returns. Call
// it before Crawl.
func WrapStore(c *Crawler, wrap func(frontier.Store) frontier.Store) {
	c.useStore(wrap(c.front))
}

// AddFormat makes the crawlers built from now on read f too, until the
// test ends; tests that use it must not run in parallel.
func AddFormat(t testing.TB, f Format) {
	old := formats
	formats = append(slices.Clip(formats), f)
	t.Cleanup(func() { formats = old })
}

// FormatTypes are the media types of every format, in order.
func FormatTypes() []string {
	var types []string
	for _, f := range formats {
		types = append(types, f.Types...)
	}
	return types
}

// SetClock makes now c's clock: its state store, robots cache, fetch
// layers and reports read the time from it. Call it before c's first
// Crawl.
func SetClock(c *Crawler, now func() time.Time) { c.clock.Store(&now) }
