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
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/redact"
)

// Elasticsearch writes documents with the bulk API into a versioned physical
// index and points the configured alias at it when the writes are done.
//
// A write that fails for now is sent again after a backoff until it lands:
// a node refusing connections or not answering within request_timeout, a
// _bulk request answered with an error status, an item rejected with 429,
// 409 or any 5xx. An outage delays documents, it never drops them. A write
// that has not landed when the sink closes is reported Unsent, so the
// crawler keeps it pending for the next run. Any other item failure (a
// mapping error, another 4xx) is Failed, with Elasticsearch's reason.
type Elasticsearch struct {
	cfg      *config.Elasticsearch
	client   *esclient.Client
	alias    string
	physical string
	onResult func(Result)
	obs      atomic.Pointer[Observer]
	// now is the crawler's clock (UseClock), time.Now until it is set.
	now atomic.Pointer[func() time.Time]

	flushBytes    int
	flushInterval time.Duration
	timeout       time.Duration // request_timeout: each _bulk request, whole

	// ctx ends when Close stops waiting: requests in flight are abandoned.
	ctx  context.Context
	stop context.CancelFunc

	// Writes wait in ready for a worker; ready holds maxHeld, so sending
	// to it never blocks. room has a slot per write held: Index and Delete
	// wait for one, so an unreachable node pauses the crawl instead of
	// filling memory with documents.
	ready   chan *write
	room    chan struct{}
	workers sync.WaitGroup

	// emb gives index writes their passages' vectors before they are
	// sent (embed.go); nil for an index without embeddings.
	emb *embedder

	mu          sync.Mutex
	settled     *sync.Cond // outstanding reached zero, or a Flush's ctx ended
	held        map[*write]struct{}
	outstanding int               // held writes, until their outcome is delivered
	latest      map[string]*write // the newest held write of each document
	flushers    int               // Flush calls waiting: workers send at once
	kick        chan struct{}     // closed when a Flush starts
	closed      bool
	// cluster is the node's outages, embedding the embedding service's.
	cluster, embedding outage
}

// maxHeld bounds the writes the sink holds (waiting, being sent, waiting
// to be sent again): at about 30 KB a document, 30 MB. Two default
// batches of 5 MB in flight and two ready behind them take about 700;
// more would only hold more memory while the node is the bottleneck.
const maxHeld = 1024

// write is one index or delete on its way.
type write struct {
	action, id, url string
	body            []byte
	attempt         int
	// next is a newer write of the same document, sent once this one has
	// an outcome, so a delete never overtakes the index it follows.
	next  *write
	timer *time.Timer // set while waiting to be sent again
	// vectors is an index write's document on its way through the
	// embedding stage; nil once its body is built.
	vectors *pending
	counts  PassageCounts
	// noVectors says why the document is written without (all) its
	// vectors; "" when it has them.
	noVectors string
}

// outage is the time writes stopped landing at one service, for one
// warning and one recovery line per outage rather than one per retry.
type outage struct {
	down     bool
	since    time.Time
	delayed  int // writes retried since
	retrying int // held writes waiting to be tried again
	// unavailable and available tell the observer.
	unavailable func(Observer, error)
	available   func(Observer, time.Duration, int)
}

// Observer sees the sink's traffic, for metrics and the log. Its methods
// are called from the bulk workers and must be cheap and safe for
// concurrent use.
type Observer interface {
	// Bulk reports one _bulk request: its HTTP status, or the error that
	// kept it from getting one, and how long it took.
	Bulk(took time.Duration, status int, err error)
	// Retry reports a write about to be sent again after a backoff.
	Retry(url string)
	// Unavailable reports that writes stopped landing, with the first
	// error; it is called once per outage.
	Unavailable(err error)
	// Available reports that writes land again after an outage that
	// lasted down, in which retried writes were delayed.
	Available(down time.Duration, retried int)
	// EmbeddingUnavailable and EmbeddingAvailable are Unavailable and
	// Available for the embedding service of an index with embeddings:
	// the documents wait for their vectors.
	EmbeddingUnavailable(err error)
	EmbeddingAvailable(down time.Duration, retried int)
}

// Observe sets the observer; nil removes it.
func (s *Elasticsearch) Observe(o Observer) {
	if o == nil {
		s.obs.Store(nil)
		return
	}
	s.obs.Store(&o)
}

// UseClock makes the sink read the time from now, the crawler's clock:
// the outages' start (DownSince) and the durations its observer sees.
// The crawler calls it right after opening the sink, as it does Observe.
func (s *Elasticsearch) UseClock(now func() time.Time) {
	s.now.Store(&now)
}

// clock is the sink's time source: the crawler's clock once UseClock set
// it, time.Now before.
func (s *Elasticsearch) clock() time.Time {
	if now := s.now.Load(); now != nil {
		return (*now)()
	}
	return time.Now()
}

// observed times the _bulk requests of a sink for its observer.
type observed struct {
	next http.RoundTripper
	obs  *atomic.Pointer[Observer]
	now  func() time.Time
}

func (t observed) RoundTrip(req *http.Request) (*http.Response, error) {
	o := t.obs.Load()
	if o == nil || !strings.HasSuffix(req.URL.Path, "/_bulk") {
		return t.next.RoundTrip(req)
	}
	start := t.now()
	res, err := t.next.RoundTrip(req)
	status := 0
	if res != nil {
		status = res.StatusCode
	}
	(*o).Bulk(t.now().Sub(start), status, err)
	return res, err
}

// Backoff bounds for retried writes.
const (
	retryMin = 250 * time.Millisecond
	retryMax = 30 * time.Second
)

// connectTimeout bounds connecting and the TLS handshake, within
// request_timeout: a node that answers at all does so at once.
const connectTimeout = 10 * time.Second

func newClient(cfg *config.Elasticsearch, wrap func(http.RoundTripper) http.RoundTripper) (*esclient.Client, error) {
	tlsCfg := &tls.Config{InsecureSkipVerify: cfg.InsecureSkipVerify} //nolint:gosec // opt-in, warned about by the caller
	var err error
	if tlsCfg.RootCAs, err = cfg.RootCAs(); err != nil {
		return nil, err
	}
	// Without these a node that accepts connections and never answers
	// holds a request, and everything waiting on it, for ever.
	timeout := cfg.RequestTimeout.D()
	dial := &net.Dialer{Timeout: min(timeout, connectTimeout), KeepAlive: 30 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dial.DialContext
	tr.TLSHandshakeTimeout = min(timeout, connectTimeout)
	tr.ResponseHeaderTimeout = timeout
	tr.TLSClientConfig = tlsCfg
	tr.MaxIdleConnsPerHost = 16
	rt := wrap(tr)
	return esclient.New(esclient.Config{
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
// (creating it if needed) and starts the bulk workers. cfg and extra (the
// extra_* fields and their types) are as config.Load leaves them: every
// default set, every value checked.
func NewElasticsearch(ctx context.Context, cfg *config.Elasticsearch, extra map[string]string, onResult func(Result)) (*Elasticsearch, error) {
	if onResult == nil {
		onResult = func(Result) {}
	}
	s := &Elasticsearch{
		cfg:           cfg,
		alias:         cfg.Index,
		physical:      docfields.PhysicalIndexWith(cfg.Index, extra, cfg.IndexOptions()),
		onResult:      onResult,
		flushBytes:    cfg.BulkFlushBytes,
		flushInterval: cfg.BulkFlushInterval.D(),
		timeout:       cfg.RequestTimeout.D(),
		ready:         make(chan *write, maxHeld),
		room:          make(chan struct{}, maxHeld),
		held:          map[*write]struct{}{},
		latest:        map[string]*write{},
		kick:          make(chan struct{}),
		cluster:       outage{unavailable: Observer.Unavailable, available: Observer.Available},
		embedding:     outage{unavailable: Observer.EmbeddingUnavailable, available: Observer.EmbeddingAvailable},
	}
	s.settled = sync.NewCond(&s.mu)
	client, err := newClient(cfg, func(rt http.RoundTripper) http.RoundTripper { return observed{next: rt, obs: &s.obs, now: s.clock} })
	if err != nil {
		return nil, err
	}
	s.client = client
	if err := s.ensureIndex(ctx, cfg, extra); err != nil {
		return nil, err
	}
	// Requests outlive the caller's per-call contexts but end with Close.
	s.ctx, s.stop = context.WithCancel(context.Background())
	if cfg.Embeddings != nil {
		if err := s.startEmbedding(ctx, cfg.Embeddings); err != nil {
			s.stop()
			return nil, err
		}
	}
	for range cfg.BulkWorkers {
		s.workers.Go(s.work)
	}
	return s, nil
}

// Target is the physical index written and its alias, and the model of
// its passages' vectors.
func (s *Elasticsearch) Target() string {
	return esTarget(s.physical, s.alias, s.cfg.Embeddings)
}

func esTarget(physical, alias string, e *config.Embeddings) string {
	t := "elasticsearch index " + physical + " (alias " + alias + ")"
	if e != nil {
		t += ", passages of " + strconv.Itoa(e.Passages.MaxTokens) + " tokens embedded by " + e.ModelID()
	}
	return t
}

// PhysicalIndex is the concrete index documents are written to.
func (s *Elasticsearch) PhysicalIndex() string { return s.physical }

func (s *Elasticsearch) ensureIndex(ctx context.Context, cfg *config.Elasticsearch, extra map[string]string) error {
	res, err := s.client.Indices.Exists([]string{s.physical}, s.client.Indices.Exists.WithContext(ctx))
	if err != nil {
		return redact.Error(fmt.Errorf("elasticsearch %s: %w", strings.Join(cfg.Addresses, ","), explainTLS(cfg, err)))
	}
	res.Body.Close()
	switch res.StatusCode {
	case http.StatusOK:
		return nil
	case http.StatusNotFound:
	case http.StatusUnauthorized:
		return fmt.Errorf("elasticsearch: checking index %s: %s: %s", s.physical, res.Status(), whoFailed(cfg))
	case http.StatusForbidden:
		return fmt.Errorf("elasticsearch: checking index %s: %s: %s", s.physical, res.Status(), lacking(cfg, s.alias))
	default:
		return fmt.Errorf("elasticsearch: checking index %s: %s", s.physical, res.Status())
	}
	body := docfields.MappingWith(extra, cfg.IndexOptions())
	settings := body["settings"].(map[string]any)
	settings["number_of_shards"] = cfg.Shards
	settings["number_of_replicas"] = *cfg.Replicas
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
		hint := ""
		if res.StatusCode == http.StatusForbidden {
			hint = "; " + lacking(cfg, s.alias)
		}
		return fmt.Errorf("elasticsearch: creating index %s: %s: %s%s", s.physical, res.Status(), msg, hint)
	}
	return nil
}

// explainTLS names the setting to look at when the node's certificate does not verify: the
// crypto/x509 message alone says what failed, not what to change.
func explainTLS(cfg *config.Elasticsearch, err error) error {
	var unknown x509.UnknownAuthorityError
	var invalid x509.CertificateInvalidError
	var host x509.HostnameError
	var verify *tls.CertificateVerificationError
	switch {
	case errors.As(err, &unknown) || errors.As(err, &verify) && errors.As(verify.Err, &unknown):
		if cfg.CAFile != "" {
			return fmt.Errorf("TLS: the node's certificate is not signed by a CA in elasticsearch.ca_file %s: %w", cfg.CAFile, err)
		}
		return fmt.Errorf("TLS: the node's certificate is not signed by a CA this system trusts; set elasticsearch.ca_file to the cluster's CA certificate: %w", err)
	case errors.As(err, &host):
		return fmt.Errorf("TLS: the node's certificate is not for the host in elasticsearch.addresses: %w", err)
	case errors.As(err, &invalid):
		return fmt.Errorf("TLS: the node's certificate is not valid: %w", err)
	}
	return err
}

// whoFailed says which credentials a 401 refused, never the secret itself.
func whoFailed(cfg *config.Elasticsearch) string {
	switch {
	case cfg.APIKey != "":
		return "the cluster refused elasticsearch.api_key (wrong, expired or invalidated)"
	case cfg.Username != "":
		return fmt.Sprintf("the cluster refused user %q: check elasticsearch.username and elasticsearch.password", cfg.Username)
	}
	return "the cluster requires authentication: set elasticsearch.username and elasticsearch.password, or elasticsearch.api_key"
}

// lacking names the privileges crawlspace needs when the cluster refuses an action for want of one.
func lacking(cfg *config.Elasticsearch, alias string) string {
	who := "these credentials"
	if cfg.Username != "" {
		who = fmt.Sprintf("user %q", cfg.Username)
	}
	return fmt.Sprintf("%s lacks a privilege: crawlspace needs the index privileges manage and write on %s* (see docs/elasticsearch.md)", who, alias)
}

func (s *Elasticsearch) Index(ctx context.Context, doc *docfields.Document) error {
	w := &write{action: "index", id: docfields.ID(doc.URL), url: doc.URL}
	if s.emb != nil {
		w.vectors = &pending{doc: doc}
	} else {
		w.body = doc.AppendJSON(nil)
	}
	return s.add(ctx, w)
}

func (s *Elasticsearch) Delete(ctx context.Context, id, url string) error {
	return s.add(ctx, &write{action: "delete", id: id, url: url})
}

func (s *Elasticsearch) Update(ctx context.Context, id, url string, fields []byte) error {
	body := make([]byte, 0, len(fields)+8)
	body = append(append(append(body, `{"doc":`...), fields...), '}')
	return s.add(ctx, &write{action: "update", id: id, url: url, body: body})
}

// add hands a write to the workers, waiting while the sink holds maxHeld.
func (s *Elasticsearch) add(ctx context.Context, w *write) error {
	select {
	case s.room <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	id := w.id
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		<-s.room
		return ErrClosed
	}
	s.held[w] = struct{}{}
	s.outstanding++
	prev := s.latest[id]
	s.latest[id] = w
	if prev != nil {
		prev.next = w
	}
	s.mu.Unlock()
	if prev == nil {
		s.queue(w)
	}
	return nil
}

// queue hands w to the stage it needs next: the embedding stage while it
// waits for vectors, else the bulk workers. Neither blocks: both hold
// maxHeld.
func (s *Elasticsearch) queue(w *write) {
	if w.vectors != nil {
		s.emb.ready <- w
		return
	}
	s.ready <- w
}

// ErrClosed is returned for a write handed to a closed sink.
var ErrClosed = errors.New("elasticsearch sink closed")

// work sends batches of writes until the sink closes.
func (s *Elasticsearch) work() {
	var buf bytes.Buffer
	batch := make([]*write, 0, 256)
	for {
		batch = s.collect(batch[:0], &buf)
		if s.ctx.Err() != nil {
			// Closing: what the batch holds is reported unsent by Close.
			return
		}
		s.send(batch, buf.Bytes())
		buf.Reset()
	}
}

// collect takes writes into a batch until it reaches bulk_flush_bytes,
// bulk_flush_interval has passed since its first write, or a Flush waits
// and no write is ready.
func (s *Elasticsearch) collect(batch []*write, buf *bytes.Buffer) []*write {
	select {
	case w := <-s.ready:
		batch = appendWrite(batch, buf, w)
	case <-s.ctx.Done():
		return batch
	}
	timer := time.NewTimer(s.flushInterval)
	defer timer.Stop()
	for buf.Len() < s.flushBytes {
		select {
		case w := <-s.ready:
			batch = appendWrite(batch, buf, w)
			continue
		default:
		}
		s.mu.Lock()
		flushing, kick := s.flushers > 0, s.kick
		s.mu.Unlock()
		if flushing {
			return batch
		}
		select {
		case w := <-s.ready:
			batch = appendWrite(batch, buf, w)
		case <-kick:
		case <-timer.C:
			return batch
		case <-s.ctx.Done():
			return batch
		}
	}
	return batch
}

// appendWrite adds w's action line and source to a _bulk body.
func appendWrite(batch []*write, buf *bytes.Buffer, w *write) []*write {
	id, _ := json.Marshal(w.id)
	buf.WriteString(`{"` + w.action + `":{"_id":`)
	buf.Write(id)
	buf.WriteString("}}\n")
	if w.body != nil {
		buf.Write(w.body)
		buf.WriteByte('\n')
	}
	return append(batch, w)
}

// bulkItem is Elasticsearch's answer for one write of a _bulk request.
type bulkItem struct {
	Status int    `json:"status"`
	Result string `json:"result"`
	Error  struct {
		Type     string `json:"type"`
		Reason   string `json:"reason"`
		CausedBy struct {
			Type   string `json:"type"`
			Reason string `json:"reason"`
		} `json:"caused_by"`
	} `json:"error"`
}

func (it *bulkItem) reason() string {
	r := it.Error.Type + ": " + it.Error.Reason
	if it.Error.CausedBy.Reason != "" {
		r += " (" + it.Error.CausedBy.Type + ": " + it.Error.CausedBy.Reason + ")"
	}
	return r
}

// retryable says whether an item failure may pass by itself, or once an
// operator fixes the cluster, so the write must wait rather than be given
// up: the node overloaded or recovering, our own writes of one document
// crossing, or a refusal that is about the cluster, not the document — a
// role that lost a privilege (403, and 401 for credentials changed under
// a running crawl), an index made read-only, a pipeline that is missing.
func retryable(it *bulkItem) bool {
	switch it.Status {
	case http.StatusTooManyRequests, http.StatusConflict, http.StatusRequestTimeout,
		http.StatusUnauthorized, http.StatusForbidden:
		return true
	}
	return it.Status >= 500 || missingPipeline(it)
}

// missingPipeline recognises the item error of a write naming an ingest
// pipeline the cluster does not have.
func missingPipeline(it *bulkItem) bool {
	return strings.Contains(it.Error.Reason, "pipeline with id [") && strings.Contains(it.Error.Reason, "] does not exist")
}

// send makes one _bulk request of batch and gives each write its outcome,
// or sends it again later.
func (s *Elasticsearch) send(batch []*write, body []byte) {
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	items, err := s.bulk(ctx, body, len(batch))
	if err != nil {
		if s.ctx.Err() != nil {
			return // closing: the writes are reported unsent
		}
		s.trouble(&s.cluster, err)
		for _, w := range batch {
			s.retry(w)
		}
		return
	}
	var again []*write
	var why error
	for i, w := range batch {
		it := &items[i]
		switch {
		case it.Status < 300 || w.action == "delete" && it.Status == http.StatusNotFound:
			s.settle(w, s.result(w, it))
		case retryable(it):
			again = append(again, w)
			if why == nil {
				why = fmt.Errorf("_bulk item %d: %s", it.Status, it.reason())
			}
		default:
			res := s.result(w, it)
			res.Outcome, res.Reason = Failed, it.reason()
			s.settle(w, res)
		}
	}
	if why == nil {
		s.recovered(&s.cluster)
		return
	}
	s.trouble(&s.cluster, why)
	for _, w := range again {
		s.retry(w)
	}
}

// bulk sends a _bulk body and returns its n items, or the error that
// leaves every write of it to be sent again.
func (s *Elasticsearch) bulk(ctx context.Context, body []byte, n int) ([]bulkItem, error) {
	opts := []func(*esapi.BulkRequest){s.client.Bulk.WithContext(ctx), s.client.Bulk.WithIndex(s.physical)}
	if s.cfg.Pipeline != "" {
		opts = append(opts, s.client.Bulk.WithPipeline(s.cfg.Pipeline))
	}
	res, err := s.client.Bulk(bytes.NewReader(body), opts...)
	if err != nil {
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within elasticsearch.request_timeout (%s): %w", s.timeout, err)
		}
		err = explainTLS(s.cfg, err)
		return nil, redact.Error(fmt.Errorf("_bulk: %w", err))
	}
	defer res.Body.Close()
	if res.IsError() {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		err := fmt.Errorf("_bulk: %s: %s", res.Status(), bytes.TrimSpace(msg))
		switch res.StatusCode {
		case http.StatusUnauthorized:
			err = fmt.Errorf("%w; %s", err, whoFailed(s.cfg))
		case http.StatusForbidden:
			err = fmt.Errorf("%w; %s", err, lacking(s.cfg, s.alias))
		}
		return nil, err
	}
	return readBulkAnswer(res.Body, n)
}

// readBulkAnswer reads the items of a _bulk answer for n writes. An answer
// that does not give each write exactly one action and an HTTP status (a
// proxy's page, a truncated body) is an error, which sends every write of
// the request again: a write is never taken as landed on a guess.
func readBulkAnswer(r io.Reader, n int) ([]bulkItem, error) {
	var answer struct {
		Items []map[string]bulkItem `json:"items"`
	}
	if err := json.NewDecoder(r).Decode(&answer); err != nil {
		return nil, fmt.Errorf("_bulk: reading the answer: %w", err)
	}
	if len(answer.Items) != n {
		return nil, fmt.Errorf("_bulk: %d items answered for %d writes", len(answer.Items), n)
	}
	items := make([]bulkItem, n)
	for i, m := range answer.Items {
		if len(m) != 1 {
			return nil, fmt.Errorf("_bulk: item %d of the answer holds %d actions, want 1", i, len(m))
		}
		for _, it := range m {
			items[i] = it
		}
		if st := items[i].Status; st < 100 || st > 599 {
			return nil, fmt.Errorf("_bulk: item %d of the answer has status %d", i, st)
		}
	}
	return items, nil
}

// result is the outcome of a write Elasticsearch answered.
func (s *Elasticsearch) result(w *write, it *bulkItem) Result {
	out := Outcome(it.Result)
	switch {
	case w.action == "delete" && (it.Result == "not_found" || it.Status == http.StatusNotFound):
		out = NotFound
	case w.action == "delete":
		out = Deleted
	case w.action == "update":
		// "noop" when the fields held these values already.
		out = Updated
	}
	return Result{ID: w.id, URL: w.url, Delete: w.action == "delete", Outcome: out, Status: it.Status, Passages: w.counts,
		NoVectors: w.noVectors != "", Reason: w.noVectors}
}

// retry sends w again after an exponential backoff, unless the sink is
// closing: then Close reports it unsent.
func (s *Elasticsearch) retry(w *write) {
	w.attempt++
	if o := s.obs.Load(); o != nil {
		(*o).Retry(w.url)
	}
	s.again(w, &s.cluster, w.attempt, 0)
}

// again queues w once more after the backoff of its attempt (or the wait
// a service asked for, when longer), counting it delayed by outage o.
func (s *Elasticsearch) again(w *write, o *outage, attempt int, asked time.Duration) {
	delay := max(min(retryMin<<min(attempt-1, 8), retryMax), asked)
	s.mu.Lock()
	defer s.mu.Unlock()
	if attempt == 1 {
		o.retrying++
		if o.down {
			o.delayed++
		}
	}
	if s.closed {
		return
	}
	w.timer = time.AfterFunc(delay, func() { s.queue(w) })
}

// settle delivers w's outcome; the next write of its document goes.
func (s *Elasticsearch) settle(w *write, res Result) {
	s.mu.Lock()
	if _, ok := s.held[w]; !ok {
		s.mu.Unlock()
		return
	}
	delete(s.held, w)
	if w.attempt > 0 {
		s.cluster.retrying--
	}
	next := w.next
	if next == nil {
		delete(s.latest, w.id)
	}
	s.mu.Unlock()
	s.onResult(res)
	if next != nil {
		s.queue(next)
	}
	s.release(1)
}

// release ends n writes' hold once their outcomes are delivered.
func (s *Elasticsearch) release(n int) {
	for range n {
		<-s.room
	}
	s.mu.Lock()
	s.outstanding -= n
	if s.outstanding == 0 {
		s.settled.Broadcast()
	}
	s.mu.Unlock()
}

// trouble notes that writes do not get through service o, warning once
// per outage.
func (s *Elasticsearch) trouble(o *outage, err error) {
	s.mu.Lock()
	if o.down {
		s.mu.Unlock()
		return
	}
	o.down, o.since, o.delayed = true, s.clock(), 0
	s.mu.Unlock()
	if obs := s.obs.Load(); obs != nil {
		o.unavailable(*obs, err)
	}
}

// DownSince is when writes stopped landing at the cluster, zero while
// they land: an outage ends once a request landed whole and no write it
// delayed waits. An outage of the embedding service is not the index's.
func (s *Elasticsearch) DownSince() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.cluster.down {
		return time.Time{}
	}
	return s.cluster.since
}

// recovered ends an outage of o once a request got through whole and no
// write it delayed is still waiting to be tried again.
func (s *Elasticsearch) recovered(o *outage) {
	s.mu.Lock()
	if !o.down || o.retrying > 0 {
		s.mu.Unlock()
		return
	}
	since, delayed := o.since, o.delayed
	o.down, o.delayed = false, 0
	s.mu.Unlock()
	if obs := s.obs.Load(); obs != nil {
		o.available(*obs, s.clock().Sub(since), delayed)
	}
}

// Flush sends what is waiting and returns once every write handed over
// so far, retries included, has an outcome, or with an error when ctx
// ends first.
func (s *Elasticsearch) Flush(ctx context.Context) error {
	s.mu.Lock()
	s.flushers++
	close(s.kick)
	s.kick = make(chan struct{})
	wake := context.AfterFunc(ctx, func() {
		s.mu.Lock()
		s.settled.Broadcast()
		s.mu.Unlock()
	})
	for s.outstanding > 0 && ctx.Err() == nil {
		s.settled.Wait()
	}
	s.flushers--
	left := s.outstanding
	s.mu.Unlock()
	wake()
	if left > 0 {
		return fmt.Errorf("elasticsearch: %d index writes not landed: %w", left, ctx.Err())
	}
	return nil
}

// Close waits for the writes held to land while ctx lasts, then abandons
// the requests in flight and reports every write still held as Unsent:
// the crawler keeps them pending for the next run. It does not publish.
func (s *Elasticsearch) Close(ctx context.Context) error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.mu.Unlock()
	err := s.Flush(ctx)
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	s.stop()
	s.workers.Wait()
	s.mu.Lock()
	left := make([]*write, 0, len(s.held))
	for w := range s.held {
		if w.timer != nil {
			w.timer.Stop()
		}
		left = append(left, w)
	}
	clear(s.held)
	clear(s.latest)
	s.mu.Unlock()
	for _, w := range left {
		s.onResult(Result{ID: w.id, URL: w.url, Delete: w.action == "delete", Outcome: Unsent,
			Reason: "not landed when the sink closed"})
	}
	s.release(len(left))
	if err != nil {
		return fmt.Errorf("%w; they stay pending", err)
	}
	return nil
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
	if s.emb != nil {
		// The alias names the index written: vectors are looked up there alone.
		s.emb.lookAlias.Store(false)
	}
	return nil
}

func (s *Elasticsearch) aliasTargets(ctx context.Context) ([]string, error) {
	return s.aliasTargetsAgain(ctx, true)
}

// aliasTargetsAgain is aliasTargets; again reads the alias once more when
// another process added it after it was found missing.
func (s *Elasticsearch) aliasTargetsAgain(ctx context.Context, again bool) ([]string, error) {
	res, err := s.client.Indices.GetAlias(s.client.Indices.GetAlias.WithName(s.alias), s.client.Indices.GetAlias.WithContext(ctx))
	if err != nil {
		return nil, fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	defer res.Body.Close()
	if res.StatusCode == http.StatusNotFound {
		if err := s.refuseConcreteIndexNamedLikeAlias(ctx); err != nil || !again {
			return nil, err
		}
		return s.aliasTargetsAgain(ctx, false)
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
// added to: a concrete index already carrying the alias's name. An alias
// another process of a shared crawl added since it was found missing is
// no such index (HEAD answers 200 for both): the GET index API names the
// concrete indices it resolves to.
func (s *Elasticsearch) refuseConcreteIndexNamedLikeAlias(ctx context.Context) error {
	res, err := s.client.Indices.Get([]string{s.alias}, s.client.Indices.Get.WithContext(ctx))
	if err != nil {
		return fmt.Errorf("elasticsearch alias %s: %w", s.alias, err)
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return nil
	}
	var byIndex map[string]json.RawMessage
	if err := json.NewDecoder(res.Body).Decode(&byIndex); err != nil {
		return fmt.Errorf("elasticsearch index %s: %w", s.alias, err)
	}
	if _, concrete := byIndex[s.alias]; concrete {
		return fmt.Errorf("elasticsearch: %q is a concrete index, not an alias; crawlspace writes to a versioned index behind the alias %q — delete or rename that index, or choose another elasticsearch.index", s.alias, s.alias)
	}
	return nil
}
