// Package sink writes documents where searches can find them: an
// Elasticsearch index behind an alias, or a file of _bulk NDJSON actions.
//
// A sink reports the outcome of every write through a callback, so the
// crawler can count creates, updates and deletes and keep a document that was
// not acknowledged until it is.
package sink

import (
	"context"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
)

// Outcome is what happened to one write.
type Outcome string

const (
	Created  Outcome = "created"
	Updated  Outcome = "updated"
	Deleted  Outcome = "deleted"
	NotFound Outcome = "not_found" // a delete of a document the index did not hold
	Written  Outcome = "written"   // the file sink cannot tell creates from updates
	Failed   Outcome = "failed"    // rejected for good, with a reason; not retried by the sink
	// Unsent: the sink closed before the write landed. Nothing is known
	// to have changed: the write stays pending and is sent again by the
	// next run.
	Unsent Outcome = "unsent"
)

// Result is the acknowledgement of one write.
type Result struct {
	ID      string
	URL     string
	Delete  bool
	Outcome Outcome
	Status  int    // HTTP status of the item, 0 for the file sink
	Reason  string // why it failed, when it did
	// Passages counts an index write's passages, with embeddings.
	Passages PassageCounts
	// NoVectors says the document was written without its vectors
	// (embeddings.on_failure: index_without_vectors), Reason why: it is
	// written again in the next cycle.
	NoVectors bool
}

// PassageCounts are what embedding one document's passages took.
type PassageCounts struct {
	// Embedded passages got a vector from the service, Reused ones kept
	// the vector the index held for the same text, Failed ones got none
	// (the document refused, or written without vectors), Dropped ones
	// were past embeddings.passages.max_per_document.
	Embedded int `json:"embedded"`
	Reused   int `json:"reused"`
	Failed   int `json:"failed"`
	Dropped  int `json:"dropped"`
	// Characters and Tokens are what was sent to the service: tokens as
	// it counted them, 0 when it does not say.
	Characters int64 `json:"characters"`
	Tokens     int64 `json:"tokens"`
	// Requests is the embedding requests made.
	Requests int `json:"requests"`
}

// Add adds o to c.
func (c *PassageCounts) Add(o PassageCounts) {
	c.Embedded += o.Embedded
	c.Reused += o.Reused
	c.Failed += o.Failed
	c.Dropped += o.Dropped
	c.Characters += o.Characters
	c.Tokens += o.Tokens
	c.Requests += o.Requests
}

// Sink receives documents and deletions. Index and Delete may return before
// the write is acknowledged; Flush waits until everything handed over so far
// has an outcome. Implementations are safe for concurrent use.
type Sink interface {
	Index(ctx context.Context, doc *docfields.Document) error
	Delete(ctx context.Context, id, url string) error
	// Update changes the fields of the document id that fields (a JSON
	// object) holds and keeps the others as indexed: the list of a group
	// of duplicates rewritten without fetching its page again. A document
	// the index does not hold is not created: the write fails.
	Update(ctx context.Context, id, url string, fields []byte) error
	Flush(ctx context.Context) error
	// Publish makes everything acknowledged so far what searches see: for
	// Elasticsearch, a refresh and the alias moved to the physical index.
	// The crawler calls it only when the index is complete.
	Publish(ctx context.Context) error
	// Close flushes and releases resources; it does not publish.
	Close(ctx context.Context) error
	// Target names where documents go, as the report shows it: the
	// crawler rebuilds every document when it differs from the target
	// last published (a new physical index, another file).
	Target() string
}

// TargetOf is the Target of the sink cfg names, without opening it: what
// status compares with the target last published.
func TargetOf(cfg *config.Config) string {
	if es := cfg.Elasticsearch; es != nil {
		return esTarget(docfields.PhysicalIndexWith(es.Index, cfg.ExtraFields, es.IndexOptions()), es.Index, es.Embeddings)
	}
	return fileTarget(cfg.Output.File)
}

// Opener returns the constructor of the sink cfg names: Elasticsearch when
// the config has an elasticsearch block, else the file sink. The crawler
// calls it with the callback that must receive every outcome.
func Opener(ctx context.Context, cfg *config.Config) func(onResult func(Result)) (Sink, error) {
	return func(onResult func(Result)) (Sink, error) {
		if es := cfg.Elasticsearch; es != nil {
			return NewElasticsearch(ctx, es, cfg.ExtraFields, onResult)
		}
		return NewFile(cfg.Output.File, cfg.Output.Index, onResult)
	}
}
