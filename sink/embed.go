package sink

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/embed"
	"github.com/crawlspace/crawlspace/passage"
)

// The embedding stage of an index with embeddings. An index write does not
// go to the bulk workers with its document as it came: it waits here until
// every passage of the document has a vector. Its passages are cut
// (package passage), the index is asked for the vectors it holds for the
// same passages (a passage whose hash is unchanged keeps its vector, so an
// unchanged passage costs no embedding call), the rest are sent to the
// embedding service in batches of batch_size, max_in_flight requests at
// once, and only then is the document's body built and queued for _bulk.
//
// A failure of the service (down, slow, 429, 5xx, credentials, vectors of
// the wrong length) is an outage like the node's: the write waits and is
// tried again after a backoff, one warning when the outage begins and one
// line when it ends, the write held in the sink's bounded room all along
// and reported Unsent if the sink closes first, so it stays pending for
// the next run. Only a text the service refuses for what it holds fails
// its document for good (as a mapping error does). With on_failure
// index_without_vectors the document is written without the vectors it
// lacks instead of waiting, and written again in the next cycle.
type embedder struct {
	cfg    *config.Embeddings
	client embed.Client
	opts   passage.Options
	ready  chan *write
	// sourceVectors: _mget must ask for the vectors, which 9.x leaves out
	// of _source unless asked.
	sourceVectors bool
	// lookAlias: the alias names another index than the one written (a
	// rebuild), where the vectors of unchanged passages are too.
	lookAlias atomic.Bool
}

// pending is an index write's document on its way through the stage.
type pending struct {
	doc      *docfields.Document
	passages []docfields.Passage // nil until cut
	looked   bool                // the index was asked for its vectors
	// alone: a request carrying this document's texts with others' was
	// refused for what it held, so its texts go in requests of their own.
	alone   bool
	attempt int // requests that failed for the service
}

func (s *Elasticsearch) startEmbedding(ctx context.Context, cfg *config.Embeddings) error {
	e := &embedder{cfg: cfg, ready: make(chan *write, maxHeld), opts: passage.Options{
		MaxTokens: cfg.Passages.MaxTokens, Overlap: cfg.Passages.OverlapTokens, MaxPassages: cfg.Passages.MaxPerDocument,
		Title: *cfg.Passages.Title, Headings: *cfg.Passages.Headings, Fingerprint: cfg.ModelID()}}
	var err error
	if e.client, err = embed.New(cfg, s.client); err != nil {
		return err
	}
	if e.sourceVectors, err = s.asksForVectors(ctx); err != nil {
		return err
	}
	targets, err := s.aliasTargets(ctx)
	if err != nil {
		return err
	}
	e.lookAlias.Store(len(targets) > 0 && !(len(targets) == 1 && targets[0] == s.physical))
	s.emb = e
	for range cfg.MaxInFlight {
		s.workers.Go(s.embedWork)
	}
	return nil
}

// asksForVectors tells whether the node leaves vectors out of _source
// unless asked (9.x: index.mapping.exclude_source_vectors): 8.19 refuses
// the parameter that asks.
func (s *Elasticsearch) asksForVectors(ctx context.Context) (bool, error) {
	res, err := s.perform(ctx, "/"+s.physical+"/_mget?_source_exclude_vectors=false", map[string]any{"ids": []string{"_"}})
	if err != nil {
		return false, fmt.Errorf("elasticsearch %s: %w", s.physical, err)
	}
	defer res.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(res.Body, 4<<10))
	switch {
	case res.StatusCode == http.StatusOK:
		return true, nil
	case res.StatusCode == http.StatusBadRequest && bytes.Contains(msg, []byte("_source_exclude_vectors")):
		return false, nil
	}
	return false, fmt.Errorf("elasticsearch %s: _mget: %s: %s", s.physical, res.Status, bytes.TrimSpace(msg))
}

func (s *Elasticsearch) perform(ctx context.Context, path string, body any) (*http.Response, error) {
	raw, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, path, bytes.NewReader(raw))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	return s.client.Perform(req)
}

// embedWork gives writes their vectors until the sink closes.
func (s *Elasticsearch) embedWork() {
	for {
		batch := s.collectVectors()
		if s.ctx.Err() != nil {
			return // closing: Close reports the batch unsent
		}
		s.vectorize(batch)
	}
}

// collectVectors takes a write, then those waiting behind it while their
// passages fit one request; a write whose texts must go alone goes alone.
func (s *Elasticsearch) collectVectors() []*write {
	var batch []*write
	select {
	case w := <-s.emb.ready:
		batch = append(batch, w)
	case <-s.ctx.Done():
		return nil
	}
	n := s.cut(batch[0])
	for n < s.emb.cfg.BatchSize && !batch[0].vectors.alone {
		select {
		case w := <-s.emb.ready:
			if w.vectors.alone {
				// It cannot join: it starts the next batch.
				s.emb.ready <- w
				return batch
			}
			batch = append(batch, w)
			n += s.cut(w)
		default:
			return batch
		}
	}
	return batch
}

// cut cuts a write's document into passages once, and says how many it has.
func (s *Elasticsearch) cut(w *write) int {
	p := w.vectors
	if p.passages == nil {
		var dropped int
		p.passages, dropped = passage.Split(p.doc, s.emb.opts)
		if p.passages == nil {
			p.passages = []docfields.Passage{}
		}
		w.counts.Dropped = dropped
	}
	return len(p.passages)
}

// want is one passage waiting for its vector.
type want struct {
	w    *write
	i    int
	text string
}

// vectorize gives a batch of writes the vectors of their passages, from
// the index where it has them, else from the service, and queues those
// done for _bulk.
func (s *Elasticsearch) vectorize(batch []*write) {
	if err := s.lookUp(batch); err != nil {
		if s.ctx.Err() != nil {
			return
		}
		// The node did not answer: the writes wait for it, as its writes do.
		s.trouble(&s.cluster, err)
		for _, w := range batch {
			s.retry(w)
		}
		return
	}
	var wants []want
	for _, w := range batch {
		p := w.vectors
		for i := range p.passages {
			if p.passages[i].Vector == nil {
				wants = append(wants, want{w, i, passage.Embedded(p.doc.Title, &p.passages[i], s.emb.opts)})
			}
		}
	}
	size := s.emb.cfg.BatchSize
	for start := 0; start < len(wants); start += size {
		chunk := wants[start:min(start+size, len(wants))]
		if err := s.request(chunk); err != nil {
			if s.ctx.Err() != nil {
				return
			}
			s.embedFailed(batch, err)
			return
		}
	}
	for _, w := range batch {
		s.vectorized(w)
	}
	// After: the outage ends once the writes it delayed have their vectors.
	s.recovered(&s.embedding)
}

// request asks the service for the vectors of chunk and fills them in.
func (s *Elasticsearch) request(chunk []want) error {
	texts := make([]string, len(chunk))
	var chars int64
	for i, c := range chunk {
		texts[i] = c.text
		chars += int64(len(c.text))
	}
	a, err := s.emb.client.Embed(s.ctx, texts)
	chunk[0].w.counts.Requests++
	if err != nil {
		return err
	}
	for i, c := range chunk {
		c.w.vectors.passages[c.i].Vector = a.Vectors[i]
		c.w.counts.Embedded++
		n := int64(len(c.text))
		c.w.counts.Characters += n
		if chars > 0 {
			// The service counts tokens per request: each text its share.
			c.w.counts.Tokens += int64(a.Tokens) * n / chars
		}
	}
	return nil
}

// embedFailed decides what becomes of a batch whose request failed.
func (s *Elasticsearch) embedFailed(batch []*write, err error) {
	kind := embed.KindOf(err)
	if kind == embed.Input && len(batch) > 1 {
		// One text refused among several: each document goes alone, to
		// find whose it is without holding the others back.
		for _, w := range batch {
			w.vectors.alone = true
			s.queue(w)
		}
		return
	}
	if kind != embed.Input {
		s.trouble(&s.embedding, err)
	}
	for _, w := range batch {
		switch {
		case s.lacking(w) == 0:
			s.vectorized(w)
		case s.emb.cfg.OnFailure == config.OnFailureIndex:
			w.noVectors = "embedding: " + err.Error()
			w.counts.Failed += s.lacking(w)
			s.vectorized(w)
		case kind == embed.Input:
			// Refused for what it holds, alone: for good, as a mapping
			// error is. The index keeps what it held; the next cycle
			// tries again.
			w.counts.Failed += s.lacking(w)
			s.giveUp(w, "embedding: "+err.Error())
		default:
			p := w.vectors
			p.attempt++
			var asked time.Duration
			if e := (*embed.Error)(nil); errors.As(err, &e) {
				asked = e.RetryAfter
			}
			s.again(w, &s.embedding, p.attempt, asked)
		}
	}
}

// lacking counts a write's passages without a vector.
func (s *Elasticsearch) lacking(w *write) int {
	n := 0
	for _, p := range w.vectors.passages {
		if p.Vector == nil {
			n++
		}
	}
	return n
}

// vectorized builds the body of a write whose passages have their vectors
// (or, with index_without_vectors, as many as they could get) and queues
// it for _bulk.
func (s *Elasticsearch) vectorized(w *write) {
	p := w.vectors
	if p.attempt > 0 {
		s.mu.Lock()
		s.embedding.retrying--
		s.mu.Unlock()
	}
	doc := *p.doc
	doc.Passages = p.passages
	w.body = doc.AppendJSON(nil)
	w.vectors = nil
	s.queue(w)
}

// giveUp ends a write that will not get its vectors: Failed, with reason.
func (s *Elasticsearch) giveUp(w *write, reason string) {
	if w.vectors.attempt > 0 {
		s.mu.Lock()
		s.embedding.retrying--
		s.mu.Unlock()
	}
	s.settle(w, Result{ID: w.id, URL: w.url, Outcome: Failed, Reason: reason, Passages: w.counts})
}

// mgetDoc is a document as _mget answers it: the hashes and vectors of
// its passages.
type mgetDoc struct {
	Found  bool `json:"found"`
	Source struct {
		Passages []struct {
			Hash   string    `json:"hash"`
			Vector []float32 `json:"vector"`
		} `json:"doc_passages"`
	} `json:"_source"`
}

// lookUp fills the passages of the batch whose text the index holds
// embedded already, by hash: in the index written and, during a rebuild,
// in the one the alias names.
func (s *Elasticsearch) lookUp(batch []*write) error {
	var docs []map[string]string
	var asked []*write
	for _, w := range batch {
		if w.vectors.looked || len(w.vectors.passages) == 0 {
			continue
		}
		asked = append(asked, w)
		docs = append(docs, map[string]string{"_index": s.physical, "_id": w.id})
		if s.emb.lookAlias.Load() {
			docs = append(docs, map[string]string{"_index": s.alias, "_id": w.id})
		}
	}
	if len(docs) == 0 {
		return nil
	}
	path := "/_mget?_source_includes=" + url.QueryEscape(docfields.PassagesField+".hash,"+docfields.VectorField)
	if s.emb.sourceVectors {
		path += "&_source_exclude_vectors=false"
	}
	ctx, cancel := context.WithTimeout(s.ctx, s.timeout)
	defer cancel()
	res, err := s.perform(ctx, path, map[string]any{"docs": docs})
	if err != nil {
		return fmt.Errorf("_mget: %w", explainTLS(s.cfg, err))
	}
	defer res.Body.Close()
	if res.StatusCode >= 300 {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("_mget: %s: %s", res.Status, bytes.TrimSpace(msg))
	}
	var ans struct {
		Docs []mgetDoc `json:"docs"`
	}
	if err := json.NewDecoder(res.Body).Decode(&ans); err != nil {
		return fmt.Errorf("_mget: reading the answer: %w", err)
	}
	if len(ans.Docs) != len(docs) {
		return fmt.Errorf("_mget: %d documents answered for %d", len(ans.Docs), len(docs))
	}
	per := len(docs) / len(asked)
	for i, w := range asked {
		known := map[string][]float32{}
		for _, d := range ans.Docs[i*per : (i+1)*per] {
			for _, p := range d.Source.Passages {
				if len(p.Vector) == s.emb.cfg.Dimensions {
					known[p.Hash] = p.Vector
				}
			}
		}
		w.vectors.looked = true
		for j := range w.vectors.passages {
			p := &w.vectors.passages[j]
			if v, ok := known[p.Hash]; ok && p.Vector == nil {
				p.Vector = v
				w.counts.Reused++
			}
		}
	}
	return nil
}
