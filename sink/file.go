package sink

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sync"

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
}

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
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(map[string]bulkMeta{"index": {Index: s.index, ID: id}}); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	s.buf = append(doc.AppendJSON(s.buf[:0]), '\n')
	if _, err := s.w.Write(s.buf); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	s.onResult(Result{ID: id, URL: doc.URL, Outcome: Written})
	return nil
}

func (s *File) Delete(_ context.Context, id, url string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.enc.Encode(map[string]bulkMeta{"delete": {Index: s.index, ID: id}}); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	s.onResult(Result{ID: id, URL: url, Delete: true, Outcome: Deleted})
	return nil
}

// Flush pushes buffered lines to the operating system and syncs the file, so
// a flushed document survives a crash of the process.
func (s *File) Flush(context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	return s.f.Sync()
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
