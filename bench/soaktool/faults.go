package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"syscall"
	"time"

	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// phase is one step of the fault schedule: a fault set on the proxy for at least Min, and
// until it has met the service's traffic.
type phase struct {
	Name  string
	Fault faultproxy.Fault
	Min   time.Duration
}

// phaseRecord is what happened while a phase was on: the proxy's counts and the service's own
// (its metrics), each as the change over the phase.
type phaseRecord struct {
	Name       string    `json:"name"`
	Start      time.Time `json:"start"`
	End        time.Time `json:"end"`
	Requests   int64     `json:"proxy_requests"`
	Faulted    int64     `json:"proxy_faulted"`
	Items      int64     `json:"proxy_items_failed"`
	BulkFailed float64   `json:"bulk_failures"`
	Retries    float64   `json:"retries"`
	// Refused says a connection the soak opened itself was refused while the phase was on.
	Refused   bool   `json:"refused_probe,omitempty"`
	Exercised bool   `json:"exercised"`
	Evidence  string `json:"evidence"`
}

// serviceMetrics is what the soak reads from the service's /metrics.
type serviceMetrics struct {
	BulkFailures float64 // crawlspace_elasticsearch_bulk_failures_total
	Retries      float64 // crawlspace_elasticsearch_retries_total, every source
}

// schedule spreads the faults over window: passes, single items failed with 503 and 429,
// whole requests answered 429 and 503, connections refused and dropped, a stall longer than
// request_timeout (so requests give up and are sent again), and a few items refused for good
// with 400 (which a later cycle must fetch and send again). The phases that fail everything
// follow one another, so the writes they hold back keep meeting the next fault.
func schedule(window, requestTimeout time.Duration) []phase {
	ph := []phase{
		{Name: "pass", Fault: faultproxy.Fault{Mode: faultproxy.Pass}},
		{Name: "items 503", Fault: faultproxy.Fault{Mode: faultproxy.FailItems, Status: 503}},
		{Name: "items 429", Fault: faultproxy.Fault{Mode: faultproxy.FailItems, Status: 429}},
		{Name: "pass", Fault: faultproxy.Fault{Mode: faultproxy.Pass}},
		{Name: "requests 429", Fault: faultproxy.Fault{Mode: faultproxy.Status, Status: 429}},
		{Name: "requests 503", Fault: faultproxy.Fault{Mode: faultproxy.Status, Status: 503}},
		{Name: "refused", Fault: faultproxy.Fault{Mode: faultproxy.Refuse}},
		{Name: "dropped", Fault: faultproxy.Fault{Mode: faultproxy.Drop}},
		{Name: "stall", Fault: faultproxy.Fault{Mode: faultproxy.Stall}},
		{Name: "items 400", Fault: faultproxy.Fault{Mode: faultproxy.FailItems, Status: 400, Count: 3}},
	}
	each := window / time.Duration(len(ph))
	for i := range ph {
		ph[i].Min = max(each, 2*time.Second)
		if ph[i].Fault.Mode == faultproxy.Stall {
			// Long enough for a request sent at its start to give up and be sent again.
			ph[i].Min = max(each, 2*requestTimeout+time.Second)
		}
	}
	return ph
}

// judge says whether the phase met the service's traffic, and how.
func (r *phaseRecord) judge(f faultproxy.Fault) {
	switch f.Mode {
	case faultproxy.Pass:
		r.Exercised = r.Requests-r.Faulted > 0
		r.Evidence = fmt.Sprintf("%d requests passed", r.Requests-r.Faulted)
	case faultproxy.FailItems:
		r.Exercised = r.Items > 0
		r.Evidence = fmt.Sprintf("%d items failed with %d", r.Items, f.Status)
	case faultproxy.Status:
		r.Exercised = r.Faulted > 0
		r.Evidence = fmt.Sprintf("%d requests answered %d", r.Faulted, f.Status)
	case faultproxy.Drop:
		r.Exercised = r.Faulted > 0
		r.Evidence = fmt.Sprintf("%d requests dropped", r.Faulted)
	case faultproxy.Stall:
		// A stalled request the service gave up on is a _bulk failure of the phase.
		r.Exercised = r.Faulted > 0 && r.BulkFailed > 0
		r.Evidence = fmt.Sprintf("%d requests stalled, %.0f _bulk requests gave up", r.Faulted, r.BulkFailed)
	case faultproxy.Refuse:
		// Refused connections never reach the proxy: the service counted failures the
		// proxy did not see.
		r.Exercised = r.Refused && r.BulkFailed > float64(r.Faulted)
		r.Evidence = fmt.Sprintf("%.0f _bulk requests failed, %d of them seen by the proxy", r.BulkFailed, r.Faulted)
	}
	r.Evidence += fmt.Sprintf(" in %.0fs", r.End.Sub(r.Start).Seconds())
}

// faultRunner drives the proxy through the schedule.
type faultRunner struct {
	proxy   *faultproxy.Proxy
	metrics func() (serviceMetrics, error)
	// capEach ends a phase that has met no traffic: it is recorded as not exercised.
	capEach time.Duration
	tick    time.Duration
}

// one applies a phase until it has met the service's traffic and lasted its least, or for
// capEach, and returns what happened meanwhile.
func (fr *faultRunner) one(ctx context.Context, ph phase) (phaseRecord, error) {
	rec := phaseRecord{Name: ph.Name, Start: time.Now()}
	s0 := fr.proxy.Stats()
	m0, _ := fr.metrics()
	if err := fr.proxy.Set(ph.Fault); err != nil {
		return rec, err
	}
	t := time.NewTicker(fr.tick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			fr.measure(&rec, ph, s0, m0)
			return rec, ctx.Err()
		case <-t.C:
		}
		if ph.Fault.Mode == faultproxy.Refuse && !rec.Refused {
			rec.Refused = refused(fr.proxy.URL)
		}
		if time.Since(rec.Start) < ph.Min {
			continue
		}
		fr.measure(&rec, ph, s0, m0)
		if rec.Exercised || time.Since(rec.Start) >= fr.capEach {
			return rec, nil
		}
	}
}

func (fr *faultRunner) measure(rec *phaseRecord, ph phase, s0 faultproxy.Stats, m0 serviceMetrics) {
	m, _ := fr.metrics()
	rec.End = time.Now()
	rec.delta(s0, fr.proxy.Stats(), m0, m)
	rec.judge(ph.Fault)
}

// delta sets the record's counts to their change from s0 and m0 to s and m.
func (r *phaseRecord) delta(s0, s faultproxy.Stats, m0, m serviceMetrics) {
	r.Requests, r.Faulted, r.Items = s.Requests-s0.Requests, s.Faulted-s0.Faulted, s.Items-s0.Items
	r.BulkFailed, r.Retries = m.BulkFailures-m0.BulkFailures, m.Retries-m0.Retries
}

// refused tries a connection to base's host and says whether it was refused.
func refused(base string) bool {
	u, err := url.Parse(base)
	if err != nil {
		return false
	}
	c, err := net.DialTimeout("tcp", u.Host, time.Second)
	if err == nil {
		c.Close()
		return false
	}
	return errors.Is(err, syscall.ECONNREFUSED)
}
