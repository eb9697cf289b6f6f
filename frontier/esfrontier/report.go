package esfrontier

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
)

// ErrNoCrawl is Open's answer, read-only, where no crawl has stored state.
var ErrNoCrawl = errors.New("esfrontier: no crawl has stored its state there yet")

var _ frontier.Reports = (*Store)(nil)

// openReadOnly reads the cycle and the cluster once and takes no
// partition: Next has nothing to hand out. Options.ReadOnly asks for no
// change; Options.Maintain for a few, made record by record as any
// process makes them.
func (s *Store) openReadOnly(ctx context.Context) (*Store, error) {
	err := s.do(ctx, http.MethodHead, "/"+s.urls, nil, nil)
	if isStatus(err, 404) {
		return nil, ErrNoCrawl
	}
	if err != nil {
		return nil, &Error{Op: "read " + s.urls, Err: err}
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	s.sched.closed = true
	if err := s.own.look(ctx); err != nil {
		return nil, err
	}
	s.closeOnce.Do(s.stop) // nothing to give back at Close
	return s, nil
}

// look reads the leases and members without writing.
func (o *ownership) look(ctx context.Context) error {
	s := o.s
	var ans struct {
		Hits struct {
			Hits []struct {
				Source metaSource `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{"size": 10000, "query": map[string]any{"terms": map[string]any{"type": []string{"lease", "member"}}}}
	if err := s.do(ctx, http.MethodPost, "/"+s.meta+"/_search", q, &ans); err != nil {
		return &Error{Op: "read the leases", Err: err}
	}
	now := s.now()
	v := View{At: now, Holders: make([]string, s.parts)}
	for _, h := range ans.Hits.Hits {
		switch h.Source.Type {
		case "lease":
			if p := h.Source.Part; p >= 0 && p < s.parts && h.Source.Holder != "" && h.Source.Expires >= now.UnixNano() {
				v.Holders[p] = h.Source.Holder
			}
		case "member":
			m := Member{Node: h.Source.Holder, Heartbeat: time.Unix(0, h.Source.Heartbeat).UTC(),
				Parts: h.Source.Parts, Hosts: h.Source.Hosts, InFlight: h.Source.InFlight}
			m.Alive = now.Sub(m.Heartbeat) < s.ttl
			v.Members = append(v.Members, m)
		}
	}
	o.mu.Lock()
	o.view = v
	o.mu.Unlock()
	return nil
}

// Usage counts the source's URLs, the hosts it queued URLs on, the URLs
// its URL limits kept out, and its requests in the cycle this process
// knows (as stored: the requests in flight are not).
func (s *Store) Usage(source string) (frontier.Usage, error) {
	cycle := s.cycle.Load()
	body := map[string]any{"size": 0, "track_total_hits": true,
		"query": map[string]any{"term": map[string]any{"source": source}},
		"aggs":  sourceCountAggs(cycle, "")}
	var ans struct {
		Hits struct {
			Total struct{ Value int64 } `json:"total"`
		} `json:"hits"`
		Aggregations sourceCounts `json:"aggregations"`
	}
	ctx := context.Background()
	if err := s.do(ctx, http.MethodPost, "/"+s.urls+"/_search", body, &ans); err != nil {
		return frontier.Usage{}, &Error{Op: "count URLs", Err: err}
	}
	r, err := s.refusals(ctx, source)
	if err != nil {
		return frontier.Usage{}, &Error{Op: "count the URLs kept out", Err: err}
	}
	return frontier.Usage{URLs: ans.Hits.Total.Value, Hosts: ans.Aggregations.Q.Hosts.Value, Refused: r.Refused, Example: r.Example,
		Cycle: cycle, Pages: int64(ans.Aggregations.P.N.Value)}, nil
}

// HostUsage and HostUsages: per-host counts are not kept by this store.
func (s *Store) HostUsage(string, string) (frontier.HostUsage, bool, error) {
	return frontier.HostUsage{}, false, nil
}

func (s *Store) HostUsages(string) ([]frontier.HostUsage, error) { return nil, nil }
