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
	err      error // the last failed sync's, returned by the next write
	// written counts the bytes handed to the file (under mu); dropped is
	// where the synced bytes already let go of the page cache end (under
	// syncMu).
	written, dropped int64

	// The file is synced by a goroutine of its own, every syncEvery, and by
	// Flush, one sync at a time (syncMu, taken before mu), without holding
	// mu: writers go on appending while the disk works.
	syncMu    sync.Mutex
	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// syncEvery bounds how long an acknowledgement waits for the next sync.
const syncEvery = time.Second

// NewFile opens path for appending, creating it if needed; index names the
// target index in the actions. Appending keeps the file a complete log of
// writes across crawls: an incremental crawl writes only what changed.
func NewFile(path, index string, onResult func(Result)) (*File, error) {
	f, err := openAppend(path)
	if err != nil {
		return nil, err
	}
	return newFile(path, index, onResult, f, syncEvery), nil
}

func openAppend(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("file sink: %w", err)
	}
	return f, nil
}

func newFile(path, index string, onResult func(Result), f *os.File, every time.Duration) *File {
	w := bufio.NewWriterSize(f, 256<<10)
	if onResult == nil {
		onResult = func(Result) {}
	}
	s := &File{path: path, index: index, onResult: onResult, f: f, w: w,
		stop: make(chan struct{}), done: make(chan struct{})}
	// Appending: the file's bytes so far are not this sink's to drop.
	if st, err := f.Stat(); err == nil {
		s.dropped = st.Size()
	}
	s.enc = json.NewEncoder(countingWriter{w, &s.written})
	go s.syncLoop(every)
	return s
}

func (s *File) syncLoop(every time.Duration) {
	defer close(s.done)
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			if err := s.sync(); err != nil {
				s.mu.Lock()
				s.err = err
				s.mu.Unlock()
			}
		}
	}
}

type bulkMeta struct {
	Index string `json:"_index"`
	ID    string `json:"_id"`
}

// bulkAction is an action line: {"index": …}, {"update": …} or {"delete": …}.
type bulkAction struct {
	Index  *bulkMeta `json:"index,omitempty"`
	Update *bulkMeta `json:"update,omitempty"`
	Delete *bulkMeta `json:"delete,omitempty"`
}

func (s *File) Index(_ context.Context, doc *docfields.Document) error {
	id := docfields.ID(doc.URL)
	return s.write(Result{ID: id, URL: doc.URL, Outcome: Written}, func() error {
		if err := s.enc.Encode(bulkAction{Index: &bulkMeta{Index: s.index, ID: id}}); err != nil {
			return err
		}
		s.buf = append(doc.AppendJSON(s.buf[:0]), '\n')
		n, err := s.w.Write(s.buf)
		s.written += int64(n)
		return err
	})
}

// Update writes an update action with fields as its partial document:
// {"doc": fields}, as _bulk takes it.
func (s *File) Update(_ context.Context, id, url string, fields []byte) error {
	return s.write(Result{ID: id, URL: url, Outcome: Written}, func() error {
		if err := s.enc.Encode(bulkAction{Update: &bulkMeta{Index: s.index, ID: id}}); err != nil {
			return err
		}
		s.buf = append(append(append(s.buf[:0], `{"doc":`...), fields...), "}\n"...)
		n, err := s.w.Write(s.buf)
		s.written += int64(n)
		return err
	})
}

func (s *File) Delete(_ context.Context, id, url string) error {
	return s.write(Result{ID: id, URL: url, Delete: true, Outcome: Deleted}, func() error {
		return s.enc.Encode(bulkAction{Delete: &bulkMeta{Index: s.index, ID: id}})
	})
}

// write appends lines under the lock and records their outcome, to be
// acknowledged by the next sync.
func (s *File) write(r Result, lines func() error) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.err; err != nil {
		s.err = nil
		return err
	}
	if err := lines(); err != nil {
		return fmt.Errorf("file sink: %w", err)
	}
	s.unsynced = append(s.unsynced, r)
	return nil
}

// Flush pushes buffered lines to the operating system, syncs the file and
// then acknowledges them: a flushed document survives a crash.
func (s *File) Flush(context.Context) error { return s.sync() }

// sync makes every line written so far durable, then acknowledges them.
// Acknowledgements are delivered without mu held, since the crawler's
// callback writes to its store.
func (s *File) sync() error {
	s.syncMu.Lock()
	defer s.syncMu.Unlock()
	s.mu.Lock()
	err := s.w.Flush()
	acks := s.unsynced
	s.unsynced = nil
	end := s.dropped + s.written
	s.mu.Unlock()
	if err == nil {
		err = s.f.Sync()
	}
	if err == nil {
		dropCache(s.f, s.dropped, end)
		s.dropped = end
	}
	if err != nil {
		// Not known to be durable: the next sync acknowledges them, or none.
		s.mu.Lock()
		s.unsynced = append(acks, s.unsynced...)
		s.mu.Unlock()
		return fmt.Errorf("file sink: %w", err)
	}
	s.deliver(acks)
	return nil
}

func (s *File) deliver(acks []Result) {
	for _, r := range acks {
		s.onResult(r)
	}
}

// Target is the file written.
func (s *File) Target() string { return fileTarget(s.path) }

func fileTarget(path string) string { return "file " + path }

// Publish syncs the file: a file has no readers to switch over.
func (s *File) Publish(ctx context.Context) error { return s.Flush(ctx) }

func (s *File) Close(ctx context.Context) error {
	s.closeOnce.Do(func() { close(s.stop) })
	<-s.done
	err := s.Flush(ctx)
	if cerr := s.f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("file sink: %w", cerr)
	}
	return err
}

// countingWriter counts what the JSON encoder writes (action lines).
type countingWriter struct {
	w *bufio.Writer
	n *int64
}

func (c countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	*c.n += int64(n)
	return n, err
}
