package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
)

// File writes Elasticsearch _bulk NDJSON: an action line and, for index
// actions, the document source line. The file can be replayed into a cluster
// with curl --data-binary @file against /_bulk.
type File struct {
	path     string
	index    string
	onResult func(Result)

	mu  sync.Mutex
	f   *os.File
	w   *bufio.Writer
	enc *json.Encoder
	buf []byte // reused for document lines
	// unsynced holds the outcomes of lines not yet synced to disk: a write
	// is acknowledged only once it would survive a crash, so the crawler
	// keeps it pending until then.
	unsynced []Result
	lastSync time.Time
}

// syncEvery bounds how long an acknowledgement waits for the next sync.
const syncEvery = time.Second

// NewFile opens path for appending, creating it if needed; index names the
// target index in the actions. Appending keeps the file a complete log of
// writes across crawls: an incremental crawl writes only what changed.
func NewFile(path, index string, onResult func(Result)) (*File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	w := bufio.NewWriterSize(f, 256<<10)
	if onResult == nil {
		onResult = func(Result) {}
	}
	return &File{path: path, index: index, onResult: onResult, f: f, w: w, enc: json.NewEncoder(w)}, nil
}

type bulkMeta struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

func (s *File) Index(_ context.Context, doc *docfields.Document) error {
	id := docfields.ID(doc.URL)
	return s.write(Result{ID: id, URL: doc.URL, Outcome: Written}, func() error {
		if err := s.enc.Encode(map[string]bulkMeta{"index": {Index: s.index, ID: id}}); err != nil {
			return err
		}
		s.buf = append(doc.AppendJSON(s.buf[:0]), '\n')
		_, err := s.w.Write(s.buf)
		return err
	})
}

func (s *File) Delete(_ context.Context, id, url string) error {
	return s.write(Result{ID: id, URL: url, Delete: true, Outcome: Deleted}, func() error {
		return s.enc.Encode(map[string]bulkMeta{"delete": {Index: s.index, ID: id}})
	})
}

// write appends lines under the lock and records their outcome, syncing
// when the last sync is old enough; acknowledgements are delivered after
// the lock is released, since the crawler's callback writes to its store.
func (s *File) write(r Result, lines func() error) error {
	s.mu.Lock()
	if err := lines(); err != nil {
		s.mu.Unlock()
		return fmt.Errorf("file sink: %w", err)
	}
	s.unsynced = append(s.unsynced, r)
	var acks []Result
	var err error
	if time.Since(s.lastSync) >= syncEvery {
		acks, err = s.syncLocked()
	}
	s.mu.Unlock()
	s.deliver(acks)
	return err
}

// Flush pushes buffered lines to the operating system, syncs the file and
// then acknowledges them: a flushed document survives a crash.
func (s *File) Flush(context.Context) error {
	s.mu.Lock()
	acks, err := s.syncLocked()
	s.mu.Unlock()
	s.deliver(acks)
	return err
}

// syncLocked syncs the file and hands back the outcomes it makes durable.
func (s *File) syncLocked() ([]Result, error) {
	if err := s.w.Flush(); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	if err := s.f.Sync(); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	s.lastSync = time.Now()
	acks := s.unsynced
	s.unsynced = nil
	return acks, nil
}

func (s *File) deliver(acks []Result) {
	for _, r := range acks {
		s.onResult(r)
	}
}

func (s *File) String() string { return "file " + s.path }

// Publish syncs the file: a file has no readers to switch over.
func (s *File) Publish(ctx context.Context) error { return s.Flush(ctx) }

func (s *File) Close(ctx context.Context) error {
	err := s.Flush(ctx)
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("file sink: %w", cerr)
	}
	return err
}
