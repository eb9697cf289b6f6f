// Package esfrontier is a frontier.Store kept in Elasticsearch, so that
// several crawlspace processes share one crawl: the per-URL state, the
// pending document writes, the stored outlinks and the cycle live in
// indices of a cluster, and each process schedules the hosts of the
// partitions it holds a lease on.
//
// Hosts are split into a fixed number of partitions (a hash of the host
// key). A partition is held by one live process at a time through a lease
// document taken and renewed with if_seq_no/if_primary_term, so one host is
// fetched from one process and its politeness holds across the cluster. A
// lease not renewed within its time to live is free to take: the process
// that held it is taken for dead, its in-flight URLs (still Waiting in the
// index) are leased again, and its unacknowledged document writes are
// queued to be fetched and written again.
//
// Every change is a _bulk request; the due URLs of the held partitions are
// read by one search with a terms aggregation per host, never by a GET per
// URL. See docs/cluster.md.
package esfrontier

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Options configure Open.
type Options struct {
	// Client reaches the cluster holding the state indices.
	Client *esclient.Client
	// Prefix names the indices: Prefix-urls, Prefix-links, Prefix-meta.
	Prefix string
	// Node names this process in leases and in status; it must be unique
	// among the processes sharing the crawl.
	Node string
	// Partitions is how many parts the hosts are split into; every process
	// of a crawl must use the same number. Zero means 64.
	Partitions int
	// LeaseTTL is how long a partition stays held without renewal; zero
	// means 30 s. Renewals happen every sixth of it.
	LeaseTTL time.Duration
	// Policy is the politeness of a host, as for frontier.Options.
	Policy func(hostKey string) frontier.HostPolicy
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ReadOnly opens the indices of an existing crawl for reading only
	// (status): no partition is taken, no change is made.
	ReadOnly bool
	// Maintain opens the indices of an existing crawl, as ReadOnly does,
	// for a command that changes a few records without taking part in the
	// crawl (confirm-deletes): no partition is taken, Next hands out
	// nothing, and the processes crawling keep their shares.
	Maintain bool
	// Log hears of the failures the store retries by itself; nil
	// discards them.
	Log *slog.Logger
	// Shards and Replicas of the URL index when it is created; zero
	// means 1 shard, and Replicas nil leaves the cluster's default.
	Shards   int
	Replicas *int
	// History is how many events each URL's history keeps (see
	// frontier.Options.History); zero keeps none.
	History int
	// Budgets bounds the URLs each source stores, by name, as for
	// frontier.Options (URLs, URLsPerHost and Hosts; see budget.go for
	// how exact they are across processes), and OnBudget hears of what
	// a limit kept out.
	Budgets  map[string]frontier.Budget
	OnBudget func(frontier.OverBudget)
}

// DefaultPartitions and DefaultLeaseTTL are the zero Options' values.
const (
	DefaultPartitions = 64
	DefaultLeaseTTL   = 30 * time.Second
)

// refreshInterval is the URL index's; recentKeep depends on it.
const refreshInterval = "1s"

// Store is the Elasticsearch frontier. Its methods are safe for concurrent use.
type Store struct {
	es       *esclient.Client
	urls     string
	links    string
	meta     string
	node     string
	inst     string // this opening's name on the requests it stores (rp, pages.go)
	parts    int
	ttl      time.Duration
	histLen  int
	policy   func(string) frontier.HostPolicy
	now      func() time.Time
	cycle    atomic.Uint64
	requests atomic.Int64 // requests sent, for the cost figures
	sent     atomic.Int64 // bytes sent
	received atomic.Int64 // bytes received
	dupCost  counter      // the part of the groups of duplicates (duplicates.go)

	log   *slog.Logger
	sched *scheduler
	own   *ownership
	bud   *budgets

	// cycleMoved is closed, and replaced, each time cycle moves forward;
	// cycleMu orders the two.
	cycleMu    sync.Mutex
	cycleMoved chan struct{}

	seenMu    sync.Mutex
	seen      map[uint64]struct{}
	seenCycle uint64

	closeOnce sync.Once
	stop      context.CancelFunc
	ctx       context.Context
	wg        sync.WaitGroup
}

var _ frontier.Store = (*Store)(nil)

// Open creates the indices if they are missing, reads the cycle, and
// starts taking partitions: Next hands out URLs once some are held.
func Open(ctx context.Context, opt Options) (*Store, error) {
	if opt.Client == nil || opt.Prefix == "" || opt.Node == "" {
		return nil, errors.New("esfrontier: Client, Prefix and Node are required")
	}
	if opt.Partitions <= 0 {
		opt.Partitions = DefaultPartitions
	}
	if opt.LeaseTTL <= 0 {
		opt.LeaseTTL = DefaultLeaseTTL
	}
	if opt.Log == nil {
		opt.Log = slog.New(slog.DiscardHandler)
	}
	if opt.Now == nil {
		opt.Now = time.Now
	}
	if opt.Policy == nil {
		opt.Policy = func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 2} }
	}
	s := &Store{es: opt.Client, urls: opt.Prefix + "-urls", links: opt.Prefix + "-links", meta: opt.Prefix + "-meta",
		node: opt.Node, parts: opt.Partitions, ttl: opt.LeaseTTL, histLen: opt.History, policy: opt.Policy, now: opt.Now, log: opt.Log,
		seen: map[uint64]struct{}{}, inst: opt.Node + "-" + randomToken(), cycleMoved: make(chan struct{})}
	s.bud = newBudgets(s, opt.Budgets, opt.OnBudget)
	if opt.ReadOnly || opt.Maintain {
		return s.openReadOnly(ctx)
	}
	if err := s.ensureIndices(ctx, opt.Shards, opt.Replicas); err != nil {
		return nil, err
	}
	if err := s.checkPartitions(ctx); err != nil {
		return nil, err
	}
	if err := s.start(ctx); err != nil {
		return nil, err
	}
	if err := s.own.waitForNamesake(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if err := s.own.tick(ctx); err != nil {
		s.stop()
		return nil, err
	}
	if s.bud.urlLimits() || s.bud.pageLimits() {
		// Counted before the first URL is admitted: a process that joins
		// a crawl near its limits does not admit as if it were empty.
		at := s.bud.seal()
		err := s.refresh(ctx)
		if err == nil {
			err = s.bud.readSources(ctx, at, true)
		}
		if err != nil {
			s.stop()
			return nil, err
		}
		s.wg.Add(1)
		go s.bud.run()
	}
	s.wg.Add(3)
	go s.own.run()
	go s.sched.load()
	go s.sched.complete()
	return s, nil
}

// start reads the cycle and builds the scheduler and the ownership.
func (s *Store) start(ctx context.Context) error {
	c, err := s.readCycle(ctx)
	if err != nil {
		return err
	}
	s.cycle.Store(c)
	s.ctx, s.stop = context.WithCancel(context.Background())
	s.sched = newScheduler(s)
	s.own = newOwnership(s)
	return nil
}

// Close stops scheduling, stores the outcomes already handed over and
// gives the held partitions back, so another process takes them at once.
func (s *Store) Close() error {
	var err error
	s.closeOnce.Do(func() {
		s.sched.close()
		s.stop()
		s.wg.Wait()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		err = s.own.releaseAll(ctx)
		c := s.Cost()
		s.log.Info("state store requests", "node", s.node, "requests", c.Requests, "bytes_sent", c.BytesSent, "bytes_received", c.BytesReceived)
	})
	return err
}

// Node is this process's name in the cluster.
func (s *Store) Node() string { return s.node }

// Cost is what the store has asked of the cluster so far.
type Cost struct {
	Requests      int64
	BytesSent     int64
	BytesReceived int64
}

// Cost returns the requests and bytes sent to the cluster since Open.
func (s *Store) Cost() Cost {
	return Cost{Requests: s.requests.Load(), BytesSent: s.sent.Load(), BytesReceived: s.received.Load()}
}

// partition is the part of the hosts hostKey falls in.
func (s *Store) partition(hostKey string) int {
	h := fnv.New32a()
	h.Write([]byte(hostKey))
	return int(h.Sum32() % uint32(s.parts))
}

// docID is a URL's document id: the URL itself while Elasticsearch takes
// it (ids stop at 512 bytes), else its SHA-256.
func docID(u string) string {
	if len(u) <= 500 {
		return u
	}
	sum := sha256.Sum256([]byte(u))
	return "sha256:" + hex.EncodeToString(sum[:])
}

// doc is a URL's record as indexed. The fields the scripts and searches
// read are never omitted.
type doc struct {
	URL          string `json:"url"`
	Host         string `json:"host"`
	Part         int    `json:"part"`
	State        uint8  `json:"state"`
	Level        int    `json:"level"`
	Seq          int64  `json:"seq"`
	Source       string `json:"source"`
	Depth        int    `json:"depth,omitempty"`
	Class        uint8  `json:"class"`
	Shift        int    `json:"shift"`
	Kind         uint8  `json:"kind,omitempty"`
	Lastmod      int64  `json:"lastmod"`
	Via          string `json:"via,omitempty"`
	Hops         int    `json:"hops,omitempty"`
	Reason       string `json:"reason,omitempty"`
	Status       int    `json:"status,omitempty"`
	ErrCount     int    `json:"err_count,omitempty"`
	TempErrCount int    `json:"temp_err_count,omitempty"`
	FetchedAt    int64  `json:"fetched_at"`
	CheckedAt    int64  `json:"checked_at"`
	ETag         string `json:"etag,omitempty"`
	LastModified string `json:"last_modified,omitempty"`
	Hash         string `json:"hash,omitempty"`
	DocID        string `json:"doc_id,omitempty"`
	Indexed      bool   `json:"indexed"`
	Pending      string `json:"pending"`
	Target       string `json:"target,omitempty"`
	Cycle        uint64 `json:"cycle"`
	SeenCycle    uint64 `json:"seen"`
	HasLinks     bool   `json:"has_links,omitempty"`
	Orphan       bool   `json:"orphan"`
	// RC is the cycle of the URL's last request, RN its requests in that
	// cycle (pages.go); only an outcome writes them.
	RC uint64 `json:"rc,omitempty"`
	RN int64  `json:"rn,omitempty"`
	// RP is the store (Store.inst) that made the last request.
	RP string `json:"rp,omitempty"`
	// HistN counts the events of the URL's history, Hist holds the newest
	// (see history.go); toDoc leaves both out, so a write sets them only
	// where it means to.
	HistN int64                `json:"hn,omitempty"`
	Hist  map[string]histEvent `json:"hist,omitempty"`
	// Dup and Claim are the URL's group of duplicates and its claim in it
	// (see duplicates.go); only an outcome writes them, so toDoc leaves
	// them out and the other writes keep them.
	Dup   string `json:"dup,omitempty"`
	Claim int    `json:"claim,omitempty"`
	// FoundAs is the URL as found where it differs from URL (Item.FoundAs);
	// records written before it have none, and read as found as keyed.
	FoundAs string `json:"found,omitempty"`
}

func nanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

func fromNanos(n int64) time.Time {
	if n == 0 {
		return time.Time{}
	}
	return time.Unix(0, n).UTC()
}

// level orders a host's queues: class first, then the rule priority.
func level(c frontier.Class, shift int) int {
	return int(c)*(frontier.MaxShift-frontier.MinShift+1) + shift - frontier.MinShift
}

func (s *Store) toDoc(r *frontier.Record, seq int64) doc {
	host := urlnorm.Origin(r.URL)
	return doc{URL: r.URL, Host: host, Part: s.partition(host), State: uint8(r.State), Level: level(r.Class, r.Shift),
		Seq: seq, Source: r.Source, Depth: r.Depth, Class: uint8(r.Class), Shift: r.Shift, Kind: r.Kind,
		Lastmod: nanos(r.Lastmod), Via: r.Via, FoundAs: r.FoundAs, Hops: r.Hops, Reason: r.Reason, Status: r.Status,
		ErrCount: r.ErrCount, TempErrCount: r.TempErrCount, FetchedAt: nanos(r.FetchedAt), CheckedAt: nanos(r.CheckedAt),
		ETag: r.ETag, LastModified: r.LastModified, Hash: r.Hash, DocID: r.DocID, Indexed: r.Indexed,
		Pending: r.Pending, Target: r.Target, Cycle: r.Cycle, SeenCycle: r.SeenCycle, HasLinks: r.HasLinks, Orphan: r.Orphan}
}

func (d *doc) record() frontier.Record {
	return frontier.Record{Item: frontier.Item{URL: d.URL, Source: d.Source, Depth: d.Depth, Class: frontier.Class(d.Class),
		Shift: d.Shift, Kind: d.Kind, Lastmod: fromNanos(d.Lastmod), Via: d.Via, Hops: d.Hops, FoundAs: d.FoundAs},
		State: frontier.State(d.State), Reason: d.Reason, Status: d.Status, ErrCount: d.ErrCount, TempErrCount: d.TempErrCount,
		FetchedAt: fromNanos(d.FetchedAt), CheckedAt: fromNanos(d.CheckedAt), ETag: d.ETag, LastModified: d.LastModified,
		Hash: d.Hash, DocID: d.DocID, Indexed: d.Indexed, Pending: d.Pending, Target: d.Target, Cycle: d.Cycle,
		SeenCycle: d.SeenCycle, HasLinks: d.HasLinks, Orphan: d.Orphan}
}

// Error is a failure of the cluster holding the state: the crawl cannot
// record outcomes while it lasts.
type Error struct {
	Op  string
	Err error
}

func (e *Error) Error() string { return "state store in Elasticsearch: " + e.Op + ": " + e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// httpError is an answer other than 2xx.
type httpError struct {
	Status int
	Body   string
}

func (e *httpError) Error() string { return fmt.Sprintf("HTTP %d: %s", e.Status, e.Body) }

func isStatus(err error, code int) bool {
	var he *httpError
	return errors.As(err, &he) && he.Status == code
}

// do sends one request and decodes a 2xx answer into out.
func (s *Store) do(ctx context.Context, method, path string, body any, out any) error {
	var rd io.Reader
	var n int
	switch b := body.(type) {
	case nil:
	case []byte:
		rd, n = bytes.NewReader(b), len(b)
	default:
		js, err := json.Marshal(b)
		if err != nil {
			return err
		}
		rd, n = bytes.NewReader(js), len(js)
	}
	req, err := http.NewRequestWithContext(ctx, method, "http://es"+path, rd)
	if err != nil {
		return err
	}
	if rd != nil {
		if strings.HasSuffix(strings.SplitN(path, "?", 2)[0], "_bulk") {
			req.Header.Set("Content-Type", "application/x-ndjson")
		} else {
			req.Header.Set("Content-Type", "application/json")
		}
	}
	s.requests.Add(1)
	s.sent.Add(int64(n))
	part, _ := ctx.Value(counterKey{}).(*counter)
	if part != nil {
		part.requests.Add(1)
		part.sent.Add(int64(n))
	}
	resp, err := s.es.Perform(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	s.received.Add(int64(len(data)))
	if part != nil {
		part.received.Add(int64(len(data)))
	}
	if err != nil {
		return err
	}
	if resp.StatusCode/100 != 2 {
		if len(data) > 500 {
			data = data[:500]
		}
		return &httpError{Status: resp.StatusCode, Body: string(data)}
	}
	if out != nil {
		return json.Unmarshal(data, out)
	}
	return nil
}

func (s *Store) ensureIndices(ctx context.Context, shards int, replicas *int) error {
	// Outcomes are written without waiting for a refresh: the scheduler
	// keeps what it stored in the last recentKeep out of its reads.
	settings := map[string]any{"refresh_interval": refreshInterval}
	if shards > 0 {
		settings["number_of_shards"] = shards
	}
	if replicas != nil {
		settings["number_of_replicas"] = *replicas
	}
	small := map[string]any{"number_of_shards": 1}
	if replicas != nil {
		small["number_of_replicas"] = *replicas
	}
	kw := map[string]any{"type": "keyword"}
	long := map[string]any{"type": "long"}
	indices := []struct {
		name string
		body map[string]any
	}{
		{s.urls, map[string]any{"settings": settings, "mappings": map[string]any{
			"dynamic": false,
			// The URL's own host routes it, so one host's URLs sit in one shard.
			"_routing": map[string]any{"required": true},
			"properties": map[string]any{
				"url": kw, "host": kw, "source": kw, "reason": kw, "pending": kw, "rp": kw,
				"part": map[string]any{"type": "integer"}, "state": map[string]any{"type": "byte"},
				"level": map[string]any{"type": "byte"}, "class": map[string]any{"type": "byte"},
				"seq": long, "cycle": long, "seen": long, "rc": long, "rn": long, "lastmod": long, "fetched_at": long, "checked_at": long,
				"indexed": map[string]any{"type": "boolean"}, "orphan": map[string]any{"type": "boolean"},
			}}}},
		{s.links, map[string]any{"settings": small, "mappings": map[string]any{"dynamic": false, "properties": map[string]any{}}}},
		{s.groupsIndex(), groupsIndexBody(replicas)},
		{s.meta, map[string]any{"settings": small, "mappings": map[string]any{"dynamic": false, "properties": map[string]any{
			"type": kw, "holder": kw, "part": map[string]any{"type": "integer"}, "expires": long, "heartbeat": long, "cycle": long,
		}}}},
	}
	for _, ix := range indices {
		err := s.do(ctx, http.MethodPut, "/"+ix.name, ix.body, nil)
		if err != nil && !(isStatus(err, 400) && strings.Contains(err.Error(), "resource_already_exists_exception")) {
			return &Error{Op: "create index " + ix.name, Err: err}
		}
	}
	// A URL index created before the page limits counted requests gets
	// their fields (pages.go): adding a field to a mapping is allowed, and
	// a no-op when it is there.
	if err := s.do(ctx, http.MethodPut, "/"+s.urls+"/_mapping", map[string]any{"properties": map[string]any{"rc": long, "rn": long, "rp": kw}}, nil); err != nil {
		return &Error{Op: "map the requests' fields of " + s.urls, Err: err}
	}
	// And a meta index its marks' cycle (pages.go).
	if err := s.do(ctx, http.MethodPut, "/"+s.meta+"/_mapping", map[string]any{"properties": map[string]any{"cycle": long}}, nil); err != nil {
		return &Error{Op: "map the marks' cycle of " + s.meta, Err: err}
	}
	return nil
}

// checkPartitions records the partition count in the first process and
// refuses a process configured with another: hosts would be split twice.
func (s *Store) checkPartitions(ctx context.Context) error {
	body := map[string]any{"type": "setting", "value": fmt.Sprint(s.parts)}
	err := s.do(ctx, http.MethodPut, "/"+s.meta+"/_create/partitions?refresh=true", body, nil)
	if err == nil {
		return nil
	}
	if !isStatus(err, 409) {
		return &Error{Op: "record the partition count", Err: err}
	}
	var got struct {
		Source struct{ Value string } `json:"_source"`
	}
	if err := s.do(ctx, http.MethodGet, "/"+s.meta+"/_doc/partitions", nil, &got); err != nil {
		return &Error{Op: "read the partition count", Err: err}
	}
	if got.Source.Value != fmt.Sprint(s.parts) {
		return fmt.Errorf("esfrontier: the crawl in %s uses %s partitions, this process %d: every process must use the same", s.meta, got.Source.Value, s.parts)
	}
	return nil
}

func esc(id string) string { return url.PathEscape(id) }

// bulkItem is one item of a _bulk answer.
type bulkItem struct {
	ID          string          `json:"_id"`
	Status      int             `json:"status"`
	Result      string          `json:"result"`
	SeqNo       int64           `json:"_seq_no"`
	PrimaryTerm int64           `json:"_primary_term"`
	Error       json.RawMessage `json:"error"`
	Get         *struct {
		Source json.RawMessage `json:"_source"`
	} `json:"get"`
}

// bulk sends NDJSON and returns each item's answer, in order.
func (s *Store) bulk(ctx context.Context, body []byte, refresh string) ([]bulkItem, error) {
	if len(body) == 0 {
		return nil, nil
	}
	path := "/_bulk"
	if refresh != "" {
		path += "?refresh=" + refresh
	}
	var ans struct {
		Items []map[string]bulkItem `json:"items"`
	}
	if err := s.do(ctx, http.MethodPost, path, body, &ans); err != nil {
		return nil, err
	}
	out := make([]bulkItem, len(ans.Items))
	for i, m := range ans.Items {
		for _, it := range m {
			out[i] = it
		}
	}
	return out, nil
}

// ndjson builds a _bulk body.
type ndjson struct{ bytes.Buffer }

func (b *ndjson) line(v any) {
	js, err := json.Marshal(v)
	if err != nil {
		panic(err) // only our own maps and structs are encoded
	}
	b.Write(js)
	b.WriteByte('\n')
}

// itemError is a bulk item's refusal as an error.
func itemError(it *bulkItem) error {
	if it.Status/100 == 2 {
		return nil
	}
	return &httpError{Status: it.Status, Body: string(it.Error)}
}

// randomToken tells apart two openings of a store under one node name (a
// process restarted at once).
func randomToken() string {
	var b [6]byte
	_, _ = rand.Read(b[:]) // crypto/rand does not fail on supported platforms
	return hex.EncodeToString(b[:])
}
