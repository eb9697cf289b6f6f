package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// clockSlack is all the politeness checks forgive: the server notes a request's end just before
// the last bytes leave and its start just after the request arrives, so only the clock's
// granularity and the instant between two time.Now calls stand between what it records and
// what happened.
const clockSlack = time.Millisecond

// politeness is what one host's requests say about the crawler's manners.
type politeness struct {
	Requests    int
	MaxInFlight int
	// MinGap is the shortest time from a request's end to the next one's start, over requests
	// that did not overlap and whose predecessor was not abandoned; -1 when there was none.
	MinGap time.Duration
	// Hops counts requests that followed the redirect the request before them answered, within
	// one fetch: robots.txt's client follows redirects (RFC 9309 asks for five), so its chain
	// is one load and only the first request of it waits the delay.
	Hops int
	// Violations describe the first few requests over max_parallel_per_host or closer than
	// the delay to the one before.
	Violations []string
	Count      int // all violations
}

// checkPoliteness holds a host's requests to its source's politeness: never more than
// maxParallel in flight, and, with one request at a time and a delay, no request starting less
// than delay after the end of the one before. (With more in flight, a request may rightly start
// just after another ended: its slot was freed by a third.) The delay is checked only after a
// request the client saw through to its end: when the client gives up on one (a timeout, a body
// over the limit), the server sees the connection close some moment after the client closed
// it, so the gap it measures is short by that moment.
func checkPoliteness(reqs []request, maxParallel int, delay time.Duration) politeness {
	p := politeness{Requests: len(reqs), MinGap: -1}
	if len(reqs) == 0 {
		return p
	}
	reqs = slices.Clone(reqs)
	slices.SortStableFunc(reqs, func(a, b request) int { return a.Start.Compare(b.Start) })
	violate := func(format string, args ...any) {
		p.Count++
		if len(p.Violations) < 5 {
			p.Violations = append(p.Violations, fmt.Sprintf(format, args...))
		}
	}
	// inFlight holds the ends of the requests started and not yet ended, in no order.
	var inFlight []time.Time
	var last request // the request that ended last among those started so far
	for i, r := range reqs {
		inFlight = slices.DeleteFunc(inFlight, func(end time.Time) bool { return !end.After(r.Start.Add(clockSlack)) })
		inFlight = append(inFlight, r.End)
		if n := len(inFlight); n > p.MaxInFlight {
			p.MaxInFlight = n
		}
		if len(inFlight) > maxParallel {
			violate("%s started with %d requests in flight (max_parallel_per_host %d)", r.Path, len(inFlight)-1, maxParallel)
		}
		// Pages are never followed within a fetch: the crawler queues each redirect target.
		hop := i > 0 && last.Location == r.Path && last.Status >= 300 && last.Status < 400 &&
			strings.HasPrefix(last.Path, "/robots.txt")
		if hop {
			p.Hops++
		}
		if i > 0 && last.End.Before(r.Start) && !last.Abandoned && !hop {
			gap := r.Start.Sub(last.End)
			if p.MinGap < 0 || gap < p.MinGap {
				p.MinGap = gap
			}
			if maxParallel == 1 && delay > 0 && gap < delay-clockSlack {
				violate("%s started %v after %s ended (delay %v)", r.Path, gap.Round(time.Microsecond), last.Path, delay)
			}
		}
		if i == 0 || r.End.After(last.End) {
			last = r
		}
	}
	return p
}
