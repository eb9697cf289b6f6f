package provider

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/mapping"
)

// docExtractor reads a document file with its format's reader and maps
// what it gives like a page. It bounds each extraction: documents.timeout
// for its time, the reader's limits for what it may unpack and hold, and a
// panic inside a parser is the file's error, never the crawler's end.
type docExtractor struct {
	reader  document.Reader
	mapper  *mapping.Extractor
	limits  document.Limits
	timeout time.Duration
	// grace is how long a reader has to return once its time is up.
	grace time.Duration
}

func newDocExtractor(r document.Reader, mapper *mapping.Extractor, d config.Documents, maxText int, grace time.Duration) *docExtractor {
	return &docExtractor{reader: r, mapper: mapper, timeout: d.Timeout.D(), grace: grace,
		limits: document.Limits{MaxText: maxText, MaxUnpacked: d.MaxUnpackedBytes, MaxEntries: d.MaxEntries,
			MaxToken: d.MaxXMLTokenBytes, MaxMemory: d.MaxMemoryBytes}}
}

// typedReader is a reader that reads by the response's Content-Type (a
// text file's charset; the type Tika is told): it gives the reader of one
// response.
type typedReader interface {
	ForContentType(contentType string) document.Reader
}

func (x *docExtractor) Extract(page mapping.Page) (*mapping.Result, error) {
	ctx, cancel := context.WithTimeout(context.Background(), x.timeout)
	defer cancel()
	r := x.reader
	if t, ok := r.(typedReader); ok {
		r = t.ForContentType(page.Header.Get("Content-Type"))
	}
	c, err := x.read(ctx, r, page.Body)
	if err != nil {
		return nil, err
	}
	return x.mapper.FromDocument(page, docfields.MediaType(page.Header.Get("Content-Type")), c)
}

// read runs the reader on a goroutine of its own, so that a panic in a
// parser is caught there and a reader that ignores its context cannot hold
// a crawl worker past the time limit and grace.
func (x *docExtractor) read(ctx context.Context, reader document.Reader, body []byte) (*document.Content, error) {
	type result struct {
		c   *document.Content
		err error
	}
	done := make(chan result, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- result{err: &document.Error{Reason: document.ReasonCorrupt,
					Err: fmt.Errorf("the reader failed on this file: %v", r)}}
			}
		}()
		c, err := reader.Read(ctx, body, x.limits)
		if err == nil && c == nil {
			err = errors.New("the reader gave nothing")
		}
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		return r.c, r.err
	case <-ctx.Done():
	}
	select {
	case r := <-done:
		if r.err == nil {
			return r.c, nil // it finished as its time ran out
		}
		return nil, timeoutError(x.timeout, r.err)
	case <-time.After(x.grace):
		return nil, timeoutError(x.timeout, errors.New("the reader did not stop: left running"))
	}
}

func timeoutError(limit time.Duration, err error) *document.Error {
	return &document.Error{Reason: document.ReasonTimeout, Err: fmt.Errorf("over documents.timeout %s: %w", limit, err)}
}
