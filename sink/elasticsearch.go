package sink

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/go-elasticsearch/v8"
	"github.com/elastic/go-elasticsearch/v8/esutil"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
)

// Elasticsearch writes documents with the bulk API into a versioned physical
// index and points the configured alias at it when the writes are done.
//
// Transport failures and per-item 429 rejections are retried with backoff
// until the sink is closed: an outage delays documents, it does not drop them.
// Any other per-item failure (a mapping conflict, say) is final and reported
// through the result callback with Elasticsearch's reason.
type Elasticsearch struct {
	client   *elasticsearch.Client
	alias    string
	physical string
	bulk     esutil.BulkIndexer
	onResult func(Result)

	// inflight counts writes handed over and not yet given an outcome;
	// retries keep their count, so Flush can wait for them too.
	mu       sync.Mutex
	inflight int
	settled  *sync.Cond
	retryCtx context.Context
	stop     context.CancelFunc

	// Writes wait in queue for the pump to hand them to the bulk indexer,
	// whose own queue holds one item per worker: while its workers are
	// sending, the crawler goes on fetching and extracting instead of
	// waiting in Add, and Elasticsearch and the crawler work side by side.
	queue    chan queued
	pumpDone chan struct{}
	closeMu  sync.RWMutex // orders senders on queue against Close closing it
	closed   bool

	obs atomic.Pointer[Observer]
}

// sinkQueue is how many writes may wait for the bulk indexer: at about 24
// KB a document, 12 MB.
const sinkQueue = 512

type queued struct {
	action, id, url string
	body            []byte
	// marker, when set, is closed once every write queued before it has
	// been handed to the bulk indexer (see Flush).
	marker chan struct{}
}

// Observer sees the sink's traffic, for metrics. Its methods are called
// from the bulk workers and must be cheap and safe for concurrent use.
type Observer interface {
	// Bulk reports one _bulk request: its HTTP status, or the error that
	// kept it from getting one, and how long it took.
	Bulk(took time.Duration, status int, err error)
	// Retry reports a write about to be sent again after a backoff.
	Retry(url string)
}

// Observe sets the observer; nil removes it.
func (s *Elasticsearch) Observe(o Observer) {
	if o == nil {
		s.obs.Store(nil)
		return
	}
	s.obs.Store(&o)
}

// observed times the _bulk requests of a sink for its observer.
type observed struct {
	next http.RoundTripper
	obs  *atomic.Pointer[Observer]
}

func (t observed) RoundTrip(req *http.Request) (*http.Response, error) {
	o := t.obs.Load()
	if o == nil || !strings.HasSuffix(req.URL.Path, "/_bulk") {
		return t.next.RoundTrip(req)
	}
	start := time.Now()
	res, err := t.next.RoundTrip(req)
	status := 0
	if res != nil {
		status = res.StatusCode
	}
	(*o).Bulk(time.Since(start), status, err)
	return res, err
}

// Backoff bounds for retried writes.
const (
	retryMin = 250 * time.Millisecond
	retryMax = 30 * time.Second
)

// NewClient builds a client from the configuration with TLS verified unless
// the configuration says otherwise.
func NewClient(cfg *config.Elasticsearch) (*elasticsearch.Client, error) {
	return newClient(cfg, nil)
}

func newClient(cfg *config.Elasticsearch, wrap func(http.RoundTripper) http.RoundTripper) (*elasticsearch.Client, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in, warned about by the caller
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("elasticsearch ca_file: %w", err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("elasticsearch ca_file %s: no certificates found", cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = tlsCfg
	tr.MaxIdleConnsPerHost = 16
	var rt http.RoundTripper = tr
	if wrap != nil {
		rt = wrap(tr)
	}
	return elasticsearch.NewClient(elasticsearch.Config{
		Addresses: cfg.Addresses,
		Username:  cfg.Username,
		Password:  cfg.Password,
		APIKey:    cfg.APIKey,
		Transport: rt,
		// The sink retries itself, per item, with its own backoff; the
		// client's retries would resend whole bulk bodies blindly.
		DisableRetry: true,
	})
}

// NewElasticsearch prepares the physical index for the current mapping
// (creating it if needed) and starts the bulk indexer. extra declares the
// extra_* fields and their types.
func NewElasticsearch(ctx context.Context, cfg *config.Elasticsearch, extra map[string]string, onResult func(Result)) (*Elasticsearch, error) {
	if onResult == nil {
		onResult = func(Result) {}
	}
	s := &Elasticsearch{
		alias:    cfg.Index,
		physical: docfields.PhysicalIndex(cfg.Index, extra),
		onResult: onResult,
	}
	client, err := newClient(cfg, func(rt http.RoundTripper) http.RoundTripper { return observed{next: rt, obs: &s.obs} })
	if err != nil {
		return nil, err
	}
	s.client = client
	s.settled = sync.NewCond(&s.mu)
	if err := s.ensureIndex(ctx, cfg, extra); err != nil {
		return nil, err
	}
	workers := cfg.BulkWorkers
	if workers <= 0 {
		workers = 2
	}
	s.bulk, err = esutil.NewBulkIndexer(esutil.BulkIndexerConfig{
		Client:        client,
		Index:         s.physical,
		NumWorkers:    workers,
		FlushBytes:    cfg.BulkFlushBytes,
		FlushInterval: cfg.BulkFlushInterval.D(),
	})
	if err != nil {
		return nil, fmt.Errorf("elasticsearch bulk indexer: %w", err)
	}
	// Retries outlive the caller's per-call contexts but end with Close.
	s.retryCtx, s.stop = context.WithCancel(context.Background())
	s.queue, s.pumpDone = make(chan queued, sinkQueue), make(chan struct{})
	go s.pump()
	return s, nil
}

func (s *Elasticsearch) pump() {
	defer close(s.pumpDone)
	for q := range s.queue {
		if q.marker != nil {
			close(q.marker)
			continue
		}
		if err := s.submit(s.retryCtx, q.action, q.id, q.url, q.body, 0); err != nil {
			// The sink is closing: the write stays pending in the crawler.
			s.onResult(Result{ID: q.id, URL: q.url, Delete: q.action == "delete", Outcome: Failed, Reason: "elasticsearch sink closed: " + err.Error()})
			s.settle()
		}
	}
}

// enqueue hands q to the pump, waiting while the queue is full.
func (s *Elasticsearch) enqueue(ctx context.Context, q queued) error {
	s.closeMu.RLock()
	defer s.closeMu.RUnlock()
	if s.closed {
		return esutil.ErrIndexerClosed
	}
	select {
	case s.queue <- q:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *Elasticsearch) String() string {
	return "elasticsearch index " + s.physical + " (alias " + s.alias + ")"
}

// PhysicalIndex is the concrete index documents are written to.
func (s *Elasticsearch) PhysicalIndex() string { return s.physical }

// Alias is the name searches use.
func (s *Elasticsearch) Alias() string { return s.alias }

func (s *Elasticsearch) ensureIndex(ctx context.Context, cfg *config.Elasticsearch, extra map[string]string) error {
	res, err := s.client.Indices.Exists([]string{s.physical}, s.client.Indices.Exists.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("elasticsearch %s: %w", strings.Join(cfg.Addresses, ","), err)
	}
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
	default:
		return fmt.Errorf("elasticsearch: checking index %s: %s", s.physical, res.Status())
	}
	body := docfields.Mapping(extra)
	settings := map[string]any{}
	if cfg.Shards > 0 {
		settings["number_of_shards"] = cfg.Shards
	}
	if cfg.Replicas != nil {
		settings["number_of_replicas"] = *cfg.Replicas
	}
	if len(settings) > 0 {
		if existing, ok := body["settings"].(map[string]any); ok {
			for k, v := range settings {
				existing[k] = v
			}
		} else {
			body["settings"] = settings
		}
	}
	raw, err := json.Marshal(body)
	if err != nil {
		return err
	}
	res, err = s.client.Indices.Create(s.physical,
		s.client.Indices.Create.WithContext(ctx),
		s.client.Indices.Create.WithBody(bytes.NewReader(raw)),
		s.client.Indices.Create.WithWaitForActiveShards("1"))
	if err != nil {
		return fmt.Errorf("elasticsearch: creating index %s: %w", s.physical, err)
	}
	defer res.Body.Close()
	if res.IsError() {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
		// Another crawler process may have created it between our check and create.
		if bytes.Contains(msg, []byte("resource_already_exists_exception")) {
			return nil
		}
		return fmt.Errorf("elasticsearch: creating index %s: %s: %s", s.physical, res.Status(), msg)
	}
	return nil
}

func (s *Elasticsearch) Index(ctx context.Context, doc *docfields.Document) error {
	return s.add(ctx, "index", docfields.ID(doc.URL), doc.URL, doc.AppendJSON(nil))
}

func (s *Elasticsearch) Delete(ctx context.Context, id, url string) error {
	return s.add(ctx, "delete", id, url, nil)
}

func (s *Elasticsearch) add(ctx context.Context, action, id, url string, body []byte) error {
	s.mu.Lock()
	s.inflight++
	s.mu.Unlock()
	if err := s.enqueue(ctx, queued{action: action, id: id, url: url, body: body}); err != nil {
		s.settle()
		return err
	}
	return nil
}

func (s *Elasticsearch) submit(ctx context.Context, action, id, url string, body []byte, attempt int) error {
	item := esutil.BulkIndexerItem{
		Action:     action,
		DocumentID: id,
		OnSuccess: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem) {
			out := Outcome(res.Result)
			switch {
			case action == "delete" && res.Result == "not_found":
				out = NotFound
			case action == "delete":
				out = Deleted
			}
			s.onResult(Result{ID: id, URL: url, Delete: action == "delete", Outcome: out, Status: res.Status})
			s.settle()
		},
		OnFailure: func(_ context.Context, _ esutil.BulkIndexerItem, res esutil.BulkIndexerResponseItem, err error) {
			// A delete of a missing document comes back as a 404 "failure";
			// for the index it is the state we wanted.
			if err == nil && action == "delete" && res.Status == http.StatusNotFound {
				s.onResult(Result{ID: id, URL: url, Delete: true, Outcome: NotFound, Status: res.Status})
				s.settle()
				return
			}
			if err != nil || res.Status == http.StatusTooManyRequests {
				s.retry(action, id, url, body, attempt+1)
				return
			}
			reason := res.Error.Type + ": " + res.Error.Reason
			if res.Error.Cause.Reason != "" {
				reason += " (" + res.Error.Cause.Type + ": " + res.Error.Cause.Reason + ")"
			}
			s.onResult(Result{ID: id, URL: url, Delete: action == "delete", Outcome: Failed, Status: res.Status, Reason: reason})
			s.settle()
		},
	}
	if body != nil {
		item.Body = bytes.NewReader(body)
	}
	return s.bulk.Add(ctx, item)
}

// retry resubmits after an exponential backoff; it gives up only when the
// sink is closed, and then reports the write as failed rather than losing it
// silently.
func (s *Elasticsearch) retry(action, id, url string, body []byte, attempt int) {
	delay := retryMin << min(attempt, 8)
	delay = min(delay, retryMax)
	if o := s.obs.Load(); o != nil {
		(*o).Retry(url)
	}
	go func() {
		t := time.NewTimer(delay)
		defer t.Stop()
		select {
		case <-t.C:
			if err := s.submit(s.retryCtx, action, id, url, body, attempt); err == nil {
				return
			}
		case <-s.retryCtx.Done():
		}
		s.onResult(Result{ID: id, URL: url, Delete: action == "delete", Outcome: Failed, Reason: "elasticsearch unavailable until the sink closed"})
		s.settle()
	}()
}

func (s *Elasticsearch) settle() {
	s.mu.Lock()
	s.inflight--
	if s.inflight == 0 {
		s.settled.Broadcast()
	}
	s.mu.Unlock()
}

// Flush sends what is buffered and waits until every write handed over so
// far, retries included, has an outcome or ctx ends.
func (s *Elasticsearch) Flush(ctx context.Context) error {
	m := make(chan struct{})
	if err := s.enqueue(ctx, queued{marker: m}); err == nil {
		select {
		case <-m:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for {
		if err := s.bulk.Flush(ctx); err != nil {
			return fmt.Errorf("elasticsearch flush: %w", err)
		}
		if s.waitSettled(ctx, time.Second) {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return err
		}
	}
}

// waitSettled waits up to d for inflight to reach zero.
func (s *Elasticsearch) waitSettled(ctx context.Context, d time.Duration) bool {
	deadline := time.Now().Add(d)
	wake := time.AfterFunc(d, func() {
		s.mu.Lock()
		s.settled.Broadcast()
		s.mu.Unlock()
	})
	defer wake.Stop()
	s.mu.Lock()
	defer s.mu.Unlock()
	for s.inflight > 0 && time.Now().Before(deadline) && ctx.Err() == nil {
		s.settled.Wait()
	}
	return s.inflight == 0
}

// Close flushes and stops the bulk indexer; retries still waiting give up
// and are reported as failed, their writes kept pending by the crawler.
func (s *Elasticsearch) Close(ctx context.Context) error {
	err := s.Flush(ctx)
	s.closeMu.Lock()
	if !s.closed {
		s.closed = true
		close(s.queue)
	}
	s.closeMu.Unlock()
	s.stop()
	<-s.pumpDone
	if cerr := s.bulk.Close(ctx); err == nil && cerr != nil && !errors.Is(cerr, esutil.ErrIndexerClosed) {
		err = cerr
	}
	return err
}

// Publish flushes, refreshes the physical index so searches see the
// writes, and points the alias at it in one atomic step.
func (s *Elasticsearch) Publish(ctx context.Context) error {
	if err := s.Flush(ctx); err != nil {
		return err
	}
	if err := s.Refresh(ctx); err != nil {
		return err
	}
	return s.PointAlias(ctx)
}

// Refresh makes every acknowledged write visible to searches.
func (s *Elasticsearch) Refresh(ctx context.Context) error {
	res, err := s.client.Indices.Refresh(s.client.Indices.Refresh.WithIndex(s.physical), s.client.Indices.Refresh.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("elasticsearch refresh: %w", err)
	}
	defer res.Body.Close()
	if res.IsError() {
		return fmt.Errorf("elasticsearch refresh: %s", res.String())
	}
	return nil
}

// PointAlias makes the alias name the physical index alone, removing it from
// any older physical index in the same request so searches never see both
// or neither.
func (s *Elasticsearch) PointAlias(ctx context.Context) error {
	current, err := s.aliasTargets(ctx)
	if err != nil {
		return err
	}
	if len(current) == 1 && current[0] == s.physical {
		return nil
	}
	actions := []map[string]any{}
	for _, idx := range current {
		if idx != s.physical {
			actions = append(actions, map[string]any{"remove": map[string]string{"index": idx, "alias": s.alias}})
		}
	}
	actions = append(actions, map[string]any{"add": map[string]any{"index": s.physical, "alias": s.alias, "is_write_index": true}})
	raw, _ := json.Marshal(map[string]any{"actions": actions})
	res, err := s.client.Indices.UpdateAliases(bytes.NewReader(raw), s.client.Indices.UpdateAliases.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	defer res.Body.Close()
	if res.IsError() {
		return fmt.Errorf("elasticsearch alias %s: %s", s.alias, res.String())
	}
	return nil
}

func (s *Elasticsearch) aliasTargets(ctx context.Context) ([]string, error) {
	res, err := s.client.Indices.GetAlias(s.client.Indices.GetAlias.WithName(s.alias), s.client.Indices.GetAlias.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		return nil, s.refuseConcreteIndexNamedLikeAlias(ctx)
	}
	if res.IsError() {
		return nil, fmt.Errorf("elasticsearch alias %s: %s", s.alias, res.String())
	}
	var byIndex map[string]json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&byIndex); err != nil {
		return nil, fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	out := make([]string, 0, len(byIndex))
	for idx := range byIndex {
		out = append(out, idx)
	}
	return out, nil
}

// refuseConcreteIndexNamedLikeAlias explains the one setup an alias cannot be
// added to: a concrete index already carrying the alias's name.
func (s *Elasticsearch) refuseConcreteIndexNamedLikeAlias(ctx context.Context) error {
	res, err := s.client.Indices.Exists([]string{s.alias}, s.client.Indices.Exists.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	res.Body.Close()
	if res.StatusCode == http.StatusOK {
		return fmt.Errorf("elasticsearch: %q is a concrete index, not an alias; crawlspace writes to a versioned index behind the alias %q — delete or rename that index, or choose another elasticsearch.index", s.alias, s.alias)
	}
	return nil
}
