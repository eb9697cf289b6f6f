// Package faultproxy serves, on loopback, a proxy in front of a real
// Elasticsearch node that fails requests the ways a node and its network
// do: connections refused, dropped mid-request or left without an answer,
// whole requests answered with an error status, and single items of a
// _bulk request failed with the error Elasticsearch would give. The fault
// is switched while the proxy runs, from any goroutine.
//
// The sink and provider tests put it between the crawler and the node;
// bench/soak can drive it for minutes on end.
package faultproxy

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"slices"
	"strings"
	"sync"
)

// Mode is what the proxy does with the requests it receives.
type Mode int

const (
	// Pass forwards every request to the node.
	Pass Mode = iota
	// Refuse closes the listening socket, so new connections are refused;
	// a request on a connection opened before is dropped.
	Refuse
	// Drop accepts a request and closes its connection without an answer.
	Drop
	// Stall reads a request and never answers it: the connection is held
	// until the client gives up or the proxy is closed, even after the
	// fault is switched off, as a node that vanished from the network
	// leaves its connections.
	Stall
	// Status answers every request with Fault.Status and an
	// Elasticsearch-shaped error body, without forwarding it.
	Status
	// FailItems forwards each _bulk request without its selected items
	// (so the node never applies them) and answers those items with
	// Fault.Status and the error Elasticsearch gives for it; the other
	// items get the node's own answer. Other requests pass.
	FailItems
	// LoseAnswer forwards the request, lets the node apply it, and
	// closes the connection instead of passing the answer on: the client
	// cannot tell a change that was made from one that was not.
	LoseAnswer
)

// Fault is the behaviour set with Set.
type Fault struct {
	Mode Mode
	// Status is the HTTP status of Status and FailItems: 429, 503, 400…
	Status int
	// Count, for FailItems, is how many items to fail before letting
	// items pass again; 0 fails every selected item for as long as the
	// fault is set.
	Count int
	// IDs, for FailItems, limits the selection to the items with these
	// document ids; empty selects any item.
	IDs []string
	// Path, when set, limits the fault to the requests whose path and
	// query contain it ("/_bulk?refresh=true"); the others pass.
	Path string
}

// Stats counts what the proxy saw since it started.
type Stats struct {
	Requests int64 // requests received, whatever was done with them
	Faulted  int64 // requests dropped, stalled or answered with an error status
	Items    int64 // _bulk items failed
}

// Proxy is a running fault-injection proxy.
type Proxy struct {
	// URL is the proxy's base address, http://127.0.0.1:PORT.
	URL string

	addr   string
	target *url.URL
	pass   *httputil.ReverseProxy
	client *http.Client
	srv    *http.Server

	mu      sync.Mutex
	fault   Fault
	ids     map[string]bool
	left    int          // items FailItems still fails when fault.Count > 0
	ln      net.Listener // nil while refusing
	stats   Stats
	changed chan struct{} // closed and replaced whenever stats change
	closed  chan struct{}
	done    bool
	active  sync.WaitGroup // requests being handled
}

// New starts a proxy on a free loopback port, passing every request to
// target (the node's base URL) until Set says otherwise.
func New(target string) (*Proxy, error) {
	tu, err := url.Parse(target)
	if err != nil || tu.Host == "" {
		return nil, fmt.Errorf("faultproxy: target %q is not a base URL", target)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{addr: ln.Addr().String(), target: tu, ln: ln,
		changed: make(chan struct{}), closed: make(chan struct{})}
	p.URL = "http://" + p.addr
	tr := http.DefaultTransport.(*http.Transport).Clone()
	p.pass = &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(tu) },
		Transport: tr,
		// A client that gave up is no error of the proxy's to report.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	p.client = &http.Client{Transport: tr}
	p.srv = &http.Server{Handler: p}
	go p.srv.Serve(ln)
	return p, nil
}

// Set switches the fault; requests already being handled keep the one
// they started with. It fails only when the port, closed to refuse
// connections, cannot be listened on again.
func (p *Proxy) Set(f Fault) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return errors.New("faultproxy: closed")
	}
	p.fault = f
	p.fault.IDs = slices.Clone(f.IDs)
	p.left = f.Count
	p.ids = nil
	if len(f.IDs) > 0 {
		p.ids = make(map[string]bool, len(f.IDs))
		for _, id := range f.IDs {
			p.ids[id] = true
		}
	}
	// Idle keep-alive connections would let a client past a refusal.
	p.srv.SetKeepAlivesEnabled(f.Mode != Refuse)
	switch {
	case f.Mode == Refuse && p.ln != nil:
		err := p.ln.Close()
		p.ln = nil
		return err
	case f.Mode != Refuse && p.ln == nil:
		ln, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("faultproxy: listening on %s again: %w", p.addr, err)
		}
		p.ln = ln
		go p.srv.Serve(ln)
	}
	return nil
}

// Stats returns the counts so far.
func (p *Proxy) Stats() Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.stats
}

// Await returns once cond holds for the counts, checking after every
// change, or with ctx's error.
func (p *Proxy) Await(ctx context.Context, cond func(Stats) bool) error {
	for {
		p.mu.Lock()
		st, ch := p.stats, p.changed
		p.mu.Unlock()
		if cond(st) {
			return nil
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return fmt.Errorf("faultproxy: waiting with %+v: %w", st, ctx.Err())
		}
	}
}

// Close stops the proxy and releases every stalled connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	if p.done {
		p.mu.Unlock()
		return
	}
	p.done = true
	close(p.closed)
	p.mu.Unlock()
	p.srv.Close()
	p.active.Wait()
}

// count adds to the stats and wakes Await.
func (p *Proxy) count(f func(*Stats)) {
	p.mu.Lock()
	f(&p.stats)
	close(p.changed)
	p.changed = make(chan struct{})
	p.mu.Unlock()
}

// enter counts a request and returns the fault it gets; ok is false once
// the proxy is closing.
func (p *Proxy) enter() (f Fault, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return f, false
	}
	// Added under mu while not done, so Close's Wait comes after it.
	p.active.Add(1)
	p.stats.Requests++
	close(p.changed)
	p.changed = make(chan struct{})
	return p.fault, true
}

func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f, ok := p.enter()
	if !ok {
		drop(w)
		return
	}
	defer p.active.Done()
	if f.Path != "" && !strings.Contains(r.URL.RequestURI(), f.Path) {
		f.Mode = Pass
	}
	switch f.Mode {
	case Refuse, Drop:
		p.count(func(s *Stats) { s.Faulted++ })
		drop(w)
	case Stall:
		io.Copy(io.Discard, r.Body)
		p.count(func(s *Stats) { s.Faulted++ })
		select {
		case <-p.closed:
		case <-r.Context().Done():
		}
	case Status:
		io.Copy(io.Discard, r.Body)
		p.count(func(s *Stats) { s.Faulted++ })
		writeError(w, f.Status)
	case LoseAnswer:
		body, err := io.ReadAll(r.Body)
		if err != nil {
			return
		}
		p.forward(r, body) // what the node answered is what is lost
		p.count(func(s *Stats) { s.Faulted++ })
		drop(w)
	case FailItems:
		if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/_bulk") {
			p.failItems(w, r)
			return
		}
		p.pass.ServeHTTP(w, r)
	default:
		p.pass.ServeHTTP(w, r)
	}
}

// drop closes the request's connection without a word.
func drop(w http.ResponseWriter) {
	if hj, ok := w.(http.Hijacker); ok {
		if conn, _, err := hj.Hijack(); err == nil {
			conn.Close()
			return
		}
	}
	panic(http.ErrAbortHandler)
}

// shapes are the errors Elasticsearch answers with, by status.
var shapes = map[int][2]string{
	http.StatusTooManyRequests:     {"es_rejected_execution_exception", "rejected execution of coordinating operation [faultproxy]"},
	http.StatusServiceUnavailable:  {"unavailable_shards_exception", "[faultproxy][0] primary shard is not active Timeout: [1m]"},
	http.StatusBadRequest:          {"mapper_parsing_exception", "failed to parse field [doc_title] of type [text] (faultproxy)"},
	http.StatusConflict:            {"version_conflict_engine_exception", "version conflict, current version is newer (faultproxy)"},
	http.StatusInternalServerError: {"exception", "faultproxy: internal error"},
}

// shape is the error type and reason for status.
func shape(status int) (typ, reason string) {
	if s, ok := shapes[status]; ok {
		return s[0], s[1]
	}
	if status >= 500 {
		return "exception", "faultproxy: status " + fmt.Sprint(status)
	}
	return "illegal_argument_exception", "faultproxy: status " + fmt.Sprint(status)
}

type esError struct {
	Type   string `json:"type"`
	Reason string `json:"reason"`
}

func writeError(w http.ResponseWriter, status int) {
	typ, reason := shape(status)
	e := esError{typ, reason}
	body, _ := json.Marshal(map[string]any{"error": map[string]any{"root_cause": []esError{e}, "type": typ, "reason": reason}, "status": status})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.WriteHeader(status)
	w.Write(body)
}

// action is one operation of a _bulk body: its action line and, but for
// a delete, its source line, each ending in a newline.
type action struct {
	op, index, id string
	lines         []byte
}

// splitBulk cuts an NDJSON _bulk body into its operations.
func splitBulk(body []byte) ([]action, error) {
	var out []action
	pos := 0
	line := func() []byte {
		l := body[pos:]
		if i := bytes.IndexByte(l, '\n'); i >= 0 {
			l = l[:i]
			pos++
		}
		pos += len(l)
		return l
	}
	for pos < len(body) {
		start := pos
		head := line()
		if len(bytes.TrimSpace(head)) == 0 {
			continue
		}
		var meta map[string]struct {
			Index string `json:"_index"`
			ID    string `json:"_id"`
		}
		if err := json.Unmarshal(head, &meta); err != nil || len(meta) != 1 {
			return nil, fmt.Errorf("faultproxy: bad _bulk action line %.80q", head)
		}
		var a action
		for op, m := range meta {
			a.op, a.index, a.id = op, m.Index, m.ID
		}
		if a.op != "delete" {
			line()
		}
		a.lines = body[start:pos]
		if !bytes.HasSuffix(a.lines, []byte("\n")) {
			a.lines = append(slices.Clip(a.lines), '\n')
		}
		out = append(out, a)
	}
	return out, nil
}

// choose marks the actions the current fault fails, counts them, and
// returns the status to fail them with.
func (p *Proxy) choose(actions []action) (failed []bool, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	failed = make([]bool, len(actions))
	n := int64(0)
	for i, a := range actions {
		if p.fault.Mode != FailItems || p.ids != nil && !p.ids[a.id] {
			continue
		}
		if p.fault.Count > 0 {
			if p.left == 0 {
				break
			}
			p.left--
		}
		failed[i] = true
		n++
	}
	if n > 0 {
		p.stats.Items += n
		close(p.changed)
		p.changed = make(chan struct{})
	}
	return failed, p.fault.Status
}

// failItems answers a _bulk request with its chosen items failed and the
// others as the node answers them.
func (p *Proxy) failItems(w http.ResponseWriter, r *http.Request) {
	body, err := io.ReadAll(r.Body)
	if err != nil {
		return
	}
	actions, err := splitBulk(body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	failed, status := p.choose(actions)
	var kept bytes.Buffer
	for i, a := range actions {
		if !failed[i] {
			kept.Write(a.lines)
		}
	}
	answer := bulkAnswer{}
	header := http.Header{}
	if kept.Len() > 0 {
		res, raw, err := p.forward(r, kept.Bytes())
		if err != nil {
			drop(w)
			return
		}
		if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil || len(answer.Items) != len(actions)-countTrue(failed) {
			// The node answered for the request as a whole: pass that on.
			copyHeader(w.Header(), res.Header)
			w.WriteHeader(res.StatusCode)
			w.Write(raw)
			return
		}
		header = res.Header
	}
	items := answer.Items
	merged := make([]json.RawMessage, 0, len(actions))
	for i, a := range actions {
		if failed[i] {
			merged = append(merged, failedItem(r, a, status))
			continue
		}
		merged = append(merged, items[0])
		items = items[1:]
	}
	out, _ := json.Marshal(bulkAnswer{Took: answer.Took, Errors: true, Items: merged})
	copyHeader(w.Header(), header)
	w.Header().Del("Content-Length")
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Elastic-Product", "Elasticsearch")
	w.WriteHeader(http.StatusOK)
	w.Write(out)
}

type bulkAnswer struct {
	Took   int               `json:"took"`
	Errors bool              `json:"errors"`
	Items  []json.RawMessage `json:"items"`
}

// forward sends body to the node in place of r's and reads the answer.
func (p *Proxy) forward(r *http.Request, body []byte) (*http.Response, []byte, error) {
	u := *p.target
	u.Path, u.RawPath, u.RawQuery = r.URL.Path, r.URL.RawPath, r.URL.RawQuery
	req, err := http.NewRequestWithContext(r.Context(), r.Method, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	copyHeader(req.Header, r.Header)
	// Hop-by-hop headers are the client's connection's, not this one's;
	// and the answer is read here and rewritten, so the transport asks
	// for and undoes any compression itself.
	for _, h := range []string{"Connection", "Proxy-Connection", "Keep-Alive", "Te", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length", "Accept-Encoding"} {
		req.Header.Del(h)
	}
	res, err := p.client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res, raw, err
}

// failedItem is the answer Elasticsearch gives an item it rejects with status.
func failedItem(r *http.Request, a action, status int) json.RawMessage {
	index := a.index
	if index == "" {
		// The index named in the path: /{index}/_bulk.
		index, _, _ = strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	}
	typ, reason := shape(status)
	item, _ := json.Marshal(map[string]any{a.op: map[string]any{
		"_index": index, "_id": a.id, "status": status, "error": esError{typ, reason}}})
	return item
}

func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

func copyHeader(dst, src http.Header) {
	for k, v := range src {
		dst[k] = slices.Clone(v)
	}
}
