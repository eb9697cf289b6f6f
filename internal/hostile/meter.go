package hostile

import (
	"net/http"
	"sync/atomic"
)

// Meter counts what a handler served, so a test bounds the work a crawler
// did by counting rather than by timing. The zero value is ready.
type Meter struct {
	requests atomic.Int64
	written  atomic.Int64
}

// Requests is how many requests the handler received.
func (m *Meter) Requests() int { return int(m.requests.Load()) }

// Written is how many body bytes the handler wrote, over every request:
// what the clients were sent, not what they decoded.
func (m *Meter) Written() int64 { return m.written.Load() }

// count notes a request and returns a writer that counts its body bytes.
func (m *Meter) count(w http.ResponseWriter) *countingWriter {
	m.requests.Add(1)
	return &countingWriter{ResponseWriter: w, m: m}
}

type countingWriter struct {
	http.ResponseWriter
	m *Meter
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.ResponseWriter.Write(p)
	c.m.written.Add(int64(n))
	return n, err
}

func (c *countingWriter) Flush() {
	if f, ok := c.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
