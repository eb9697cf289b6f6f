package provider

import (
	"testing"
	"time"
)

// FuzzRetryAfterIsNeverNegativeNorPastRetryMax reads any Retry-After a
// server sends: the wait is never negative, never past retryMax.
func FuzzRetryAfterIsNeverNegativeNorPastRetryMax(f *testing.F) {
	for _, v := range []string{"120", "0", "-5", "Wed, 21 Oct 2015 07:28:00 GMT", "Fri, 31 Dec 9999 23:59:59 GMT",
		"99999999999999999999", " 30 ", "1e3", ""} {
		f.Add(v, 3)
	}
	f.Fuzz(func(t *testing.T, v string, attempts int) {
		d := defaultTiming.retryAfter(v, attempts, time.Now())
		if d < 0 || d > defaultTiming.retryMax {
			t.Fatalf("retryAfter(%q, %d) = %s, want within [0, %s]", v, attempts, d, defaultTiming.retryMax)
		}
	})
}

// A Retry-After of 292 years overflowed into the past, and the host was
// asked again at once: it waits retryMax instead, as for any long wait.
func TestRetryAfterPastAnyDurationWaitsRetryMaxInsteadOfNothing(t *testing.T) {
	for _, v := range []string{"9227000000", "99999999999999999999"} {
		if got := defaultTiming.retryAfter(v, 0, time.Now()); got != defaultTiming.retryMax {
			t.Errorf("retryAfter(%q) = %s, want %s", v, got, defaultTiming.retryMax)
		}
	}
	if got := defaultTiming.backoff(-6); got != defaultTiming.retryBase {
		t.Errorf("backoff of a damaged count -6 = %s, want %s", got, defaultTiming.retryBase)
	}
}
