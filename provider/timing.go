package provider

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// timing holds how long a crawler waits, for what.
type timing struct {
	// Temporary failures back a host off for retryBase << attempts, at
	// most retryMax.
	retryBase, retryMax time.Duration
	// robotsRetry is the first wait before an unreachable robots.txt is
	// fetched again; zero keeps the robots cache's default.
	robotsRetry time.Duration
	// checkpoint is how often a running crawl re-reads the reject lists.
	checkpoint time.Duration
	// closeGrace is how long Close lets the sink land the writes it holds
	// before leaving them pending: a stop must not wait on a stalled node.
	closeGrace time.Duration
	// flushWait is how long a cycle whose fetching is done waits for its
	// writes to land before it ends in error, unpublished, leaving them
	// pending.
	flushWait time.Duration
	// readGrace is how long a document reader has to return once
	// documents.timeout is up, before it is left running.
	readGrace time.Duration
}

var defaultTiming = timing{
	retryBase:  2 * time.Second,
	retryMax:   10 * time.Minute,
	checkpoint: 30 * time.Second,
	closeGrace: 10 * time.Second,
	flushWait:  5 * time.Minute,
	readGrace:  5 * time.Second,
}

// retryAfter reads a Retry-After header (seconds or an HTTP date), falling
// back to the backoff for the attempt; a date counts from now.
func (tm timing) retryAfter(v string, attempts int, now time.Time) time.Duration {
	if v = strings.TrimSpace(v); v != "" {
		secs, err := strconv.ParseUint(v, 10, 63)
		switch {
		case err == nil:
			// Compared in seconds: a huge value would overflow a Duration
			// into the past, and the host would be asked again at once.
			return time.Duration(min(secs, uint64(tm.retryMax/time.Second))) * time.Second
		case errors.Is(err, strconv.ErrRange):
			return tm.retryMax // delay-seconds too long to hold: wait as long as we ever do
		}
		if t, err := http.ParseTime(v); err == nil {
			return min(max(t.Sub(now), 0), tm.retryMax)
		}
	}
	return tm.backoff(attempts)
}

func (tm timing) backoff(attempts int) time.Duration {
	// A count read from a damaged record may be anything: clamp it.
	return min(tm.retryBase<<min(max(attempts, 0), 12), tm.retryMax)
}
