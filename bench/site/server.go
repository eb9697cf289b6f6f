package main

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Stats counts what the server answered, so the benchmark can tell how a
// crawler used the site (pages fetched, 304s on a re-crawl, stray URLs)
// without trusting the crawler's own account.
type Stats struct {
	OK           atomic.Int64
	NotModified  atomic.Int64
	NotFound     atomic.Int64
	Robots       atomic.Int64
	Other        atomic.Int64
	BytesWritten atomic.Int64
}

// MarshalJSON writes the current counts.
func (st *Stats) MarshalJSON() ([]byte, error) {
	return json.Marshal(map[string]int64{
		"ok": st.OK.Load(), "not_modified": st.NotModified.Load(), "not_found": st.NotFound.Load(),
		"robots": st.Robots.Load(), "other": st.Other.Load(), "bytes": st.BytesWritten.Load(),
	})
}

// StatsPath serves the counters. No page links to it, so crawlers never
// find it; requests to it are not counted.
const StatsPath = "/_bench/stats"

// ValidatorsPath lists every page as "path?query TAB ETag TAB Last-Modified",
// one a line: what a crawler that has seen the site keeps of it, so the bare
// conditional-GET client (benchtool condget) can check every page as the
// re-crawl does without crawling first. Not linked and not counted either.
const ValidatorsPath = "/_bench/validators"

const robotsTxt = "User-agent: *\nAllow: /\n"

// Handler serves the site with validators: every page has a strong ETag and
// a Last-Modified date, and conditional requests get 304 Not Modified
// without the page being rendered, as a static file server would answer.
type Handler struct {
	Site  *Site
	Stats Stats
	bufs  sync.Pool
}

// NewHandler serves site.
func NewHandler(site *Site) *Handler {
	h := &Handler{Site: site}
	h.bufs.New = func() any { b := make([]byte, 0, 40<<10); return &b }
	return h
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case StatsPath:
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(&h.Stats)
		return
	case ValidatorsPath:
		h.writeValidators(w)
		return
	case "/robots.txt":
		h.Stats.Robots.Add(1)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = w.Write([]byte(robotsTxt))
		return
	}
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		h.Stats.Other.Add(1)
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	i, ok := h.Site.Lookup(r.URL.EscapedPath(), r.URL.RawQuery)
	if !ok {
		h.Stats.NotFound.Add(1)
		http.NotFound(w, r)
		return
	}
	etag := h.Site.ETag(i)
	mod := h.Site.LastModified(i)
	hdr := w.Header()
	hdr["ETag"] = []string{etag}
	hdr["Last-Modified"] = []string{mod.Format(http.TimeFormat)}
	if notModified(r, etag, mod) {
		h.Stats.NotModified.Add(1)
		w.WriteHeader(http.StatusNotModified)
		return
	}
	bp := h.bufs.Get().(*[]byte)
	body := h.Site.AppendPage((*bp)[:0], i, r.Host)
	hdr["Content-Type"] = []string{"text/html; charset=utf-8"}
	hdr["Content-Length"] = []string{strconv.Itoa(len(body))}
	h.Stats.OK.Add(1)
	if r.Method == http.MethodGet {
		n, _ := w.Write(body)
		h.Stats.BytesWritten.Add(int64(n))
	}
	*bp = body
	h.bufs.Put(bp)
}

// notModified applies RFC 9110 section 13.2.2: If-None-Match decides when
// present (weak comparison); otherwise If-Modified-Since does.
func notModified(r *http.Request, etag string, mod time.Time) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for _, cand := range strings.Split(inm, ",") {
			cand = strings.TrimSpace(cand)
			if cand == "*" || strings.TrimPrefix(cand, "W/") == etag {
				return true
			}
		}
		return false
	}
	if ims := r.Header.Get("If-Modified-Since"); ims != "" {
		t, err := http.ParseTime(ims)
		return err == nil && !mod.After(t)
	}
	return false
}

func (h *Handler) writeValidators(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	bw := bufio.NewWriterSize(w, 64<<10)
	var line []byte
	for i := range h.Site.N {
		line = h.Site.AppendURL(line[:0], i)
		line = append(line, '\t')
		line = append(line, h.Site.ETag(i)...)
		line = append(line, '\t')
		line = h.Site.LastModified(i).AppendFormat(line, http.TimeFormat)
		line = append(line, '\n')
		if _, err := bw.Write(line); err != nil {
			return
		}
	}
	_ = bw.Flush()
}
