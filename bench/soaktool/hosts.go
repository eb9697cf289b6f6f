package main

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/internal/hostile"
)

// host is one server of the soak on a loopback port of its own, so the crawler treats it as a
// host of its own for politeness. It records every request's start and end.
type host struct {
	name string
	URL  string
	// politeness is what the host's source is configured with: the bounds the requests the
	// host records must keep to.
	maxParallel int
	delay       time.Duration

	srv *http.Server
	rec *recorder
}

// request is one request a host received, as the server saw it.
type request struct {
	Path       string
	Start, End time.Time
	Status     int
	Location   string // the redirect's target, as a request URI on this host
	// Abandoned says the client went away before the handler was done (a timeout, a body
	// over the size limit, the service stopping): End is when the server saw it go.
	Abandoned bool
}

type recorder struct {
	mu     sync.Mutex
	reqs   []request
	active sync.WaitGroup
	// sawGone, when set, is called once the server has noted a client gone
	// (a test orders its handler's return after it).
	sawGone func()
}

// wrap records each request h serves. A request ends when h returns, or, when the client
// went away first, when the server saw the connection close.
func (rec *recorder) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rec.active.Add(1)
		defer rec.active.Done()
		start := time.Now()
		var gone time.Time
		ran := make(chan struct{})
		stop := context.AfterFunc(r.Context(), func() {
			gone = time.Now()
			close(ran)
			if rec.sawGone != nil {
				rec.sawGone()
			}
		})
		sw := &statusWriter{ResponseWriter: w, status: http.StatusOK}
		h.ServeHTTP(sw, r)
		end := time.Now()
		// The last bytes a handler writes may reach the client, and be all it reads, before the
		// handler returns: the request ended when they were handed to the connection.
		if !sw.lastWrite.IsZero() {
			end = sw.lastWrite
		}
		abandoned := false
		// The request's context ends when the client goes away, or after the
		// handler returns: ended now, while still in the handler, it went away.
		if !stop() {
			<-ran
			abandoned = true
			if gone.Before(end) {
				end = gone
			}
		}
		rec.mu.Lock()
		q := request{Path: r.URL.RequestURI(), Start: start, End: end, Status: sw.status, Abandoned: abandoned}
		if loc := w.Header().Get("Location"); loc != "" {
			if u, err := r.URL.Parse(loc); err == nil {
				q.Location = u.RequestURI()
			}
		}
		rec.reqs = append(rec.reqs, q)
		rec.mu.Unlock()
	})
}

// requests is every request recorded so far, in the order they ended.
func (rec *recorder) requests() []request {
	rec.mu.Lock()
	defer rec.mu.Unlock()
	return append([]request(nil), rec.reqs...)
}

// statusWriter remembers the status sent and when the last bytes were handed on, and passes
// flushes on: the drip flushes every byte.
type statusWriter struct {
	http.ResponseWriter
	status    int
	wrote     bool
	lastWrite time.Time // just before the last Write or Flush passed bytes on
}

func (s *statusWriter) WriteHeader(code int) {
	if !s.wrote {
		s.status, s.wrote = code, true
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(p []byte) (int, error) {
	s.wrote = true
	s.lastWrite = time.Now()
	return s.ResponseWriter.Write(p)
}

func (s *statusWriter) Flush() {
	if f, ok := s.ResponseWriter.(http.Flusher); ok {
		s.lastWrite = time.Now()
		f.Flush()
	}
}

// serve starts h on a free loopback port.
func serve(name string, h http.Handler, maxParallel int, delay time.Duration) (*host, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	return serveOn(ln, name, h, maxParallel, delay), nil
}

// serveOn starts h on ln: hosts that link one another know their addresses before they serve.
func serveOn(ln net.Listener, name string, h http.Handler, maxParallel int, delay time.Duration) *host {
	hs := &host{name: name, URL: "http://" + ln.Addr().String(), maxParallel: maxParallel, delay: delay, rec: &recorder{}}
	hs.srv = &http.Server{Handler: hs.rec.wrap(h), ReadHeaderTimeout: time.Minute}
	go hs.srv.Serve(ln)
	return hs
}

// close stops the server and waits for every handler, so the requests recorded are all there
// are, each with its end.
func (hs *host) close() {
	hs.srv.Close()
	hs.rec.active.Wait()
}

// hostileSites are the hazards the soak crawls beside the ordinary site, each on a host of its
// own: what each must come to is checked at the end.
type hostileSites struct {
	trap      *hostile.Trap
	bombs     map[string]*hostile.Bomb
	drips     map[string]*hostile.Drip
	redirects map[string]*hostile.Redirects
	// robotsLoop is the redirect host's robots.txt.
	robotsLoop *hostile.Redirects
	lies       map[string]lie
	churn      *churn
	fanout     *fanout
}

// lie is a page whose headers do not describe its bytes, and the title the index must hold for
// it ("" when it must not be indexed at all).
type lie struct {
	*hostile.Lie
	title string
}

// listing is an HTML page linking each path, the start page of a hostile host.
func listing(title string, paths []string) http.Handler {
	var links []string
	for _, p := range paths {
		links = append(links, link(p, p))
	}
	body := page(title, "state "+title, "The hazards of this host.", links).body
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(body)
	})
}

// mux serves a start page listing the handlers, the handlers, and 404 for anything else.
func mux[H http.Handler](title string, pages map[string]H, extra map[string]http.Handler) http.Handler {
	m := http.NewServeMux()
	var paths []string
	for p, h := range pages {
		m.Handle(p, h)
		paths = append(paths, p)
	}
	for p, h := range extra {
		m.Handle(p, h)
	}
	slices.Sort(paths)
	m.Handle("/{$}", listing(title, paths))
	return m
}

func newHostileSites(seed uint64, bombSize int64) (*hostileSites, error) {
	hs := &hostileSites{
		trap: &hostile.Trap{Seed: seed, Links: 8, Offsite: 2},
		bombs: map[string]*hostile.Bomb{
			"/gzip.html":          {Size: bombSize, Encoding: "gzip"},
			"/x-gzip.html":        {Size: bombSize, Encoding: "x-gzip"},
			"/gzip-identity.html": {Size: bombSize, Encoding: "gzip, identity"},
			"/nested.html":        {Size: bombSize, Encoding: "gzip, gzip"},
			"/deflate.html":       {Size: bombSize, Encoding: "deflate"},
		},
		drips: map[string]*hostile.Drip{
			"/drip/forever.html": {Head: "<!doctype html><html><head><title>drip", Every: 100 * time.Millisecond},
			"/drip/headers.html": {Every: 200 * time.Millisecond},
		},
		redirects: map[string]*hostile.Redirects{
			"/short.html":  {Hops: 3, To: "/landing.html"},
			"/loop.html":   {Hops: 2, Loop: true},
			"/chain.html":  {Hops: 30, To: "/far.html"},
			"/moved.html":  {Hops: 1, To: "/landing.html", Status: http.StatusMovedPermanently},
			"/circle.html": {Hops: 1, Loop: true, Status: http.StatusMovedPermanently},
		},
		robotsLoop: &hostile.Redirects{Hops: 3, Loop: true},
		lies:       lies(),
		churn:      newChurn(seed),
		fanout:     &fanout{},
	}
	for _, b := range hs.bombs {
		if _, err := b.Body(); err != nil {
			return nil, err
		}
	}
	return hs, nil
}

// redirectLanding is where the redirect host's good chains end, and the only pages of it the
// index may hold besides its start page.
var redirectLanding = map[string]string{"/landing.html": "Landing", "/far.html": ""}

func landingHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		title := redirectLanding[r.URL.Path]
		if title == "" {
			title = "Too far"
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.Write(page(title, "state "+r.URL.Path, "A chain of redirects ends here.", nil).body)
	})
}

// startHosts serves the ordinary site and every hostile site, each on its own port, with the
// politeness its source is configured with.
func startHosts(s *site, hs *hostileSites) (map[string]*host, error) {
	specs := []struct {
		name        string
		h           http.Handler
		maxParallel int
		delay       time.Duration
	}{
		// The ordinary site: one request at a time and a delay, checked exactly.
		{"site", s, 1, 20 * time.Millisecond},
		// The trap's delay spreads its pages, new documents each, over a cycle: a steady
		// stream of index writes for the faults to meet.
		{"trap", hs.trap, 1, 100 * time.Millisecond},
		{"bombs", mux("Bombs", hs.bombs, nil), 2, 20 * time.Millisecond},
		{"drips", mux("Drips", hs.drips, nil), 2, 20 * time.Millisecond},
		{"redirects", mux("Redirects", hs.redirects, map[string]http.Handler{
			// robots.txt loops: RFC 9309 takes it as unavailable, which allows everything.
			"/robots.txt":   hs.robotsLoop,
			"/landing.html": landingHandler(), "/far.html": landingHandler()}), 1, 20 * time.Millisecond},
		{"lies", mux("Lies", hs.lies, nil), 2, 20 * time.Millisecond},
		{"churn", hs.churn, 1, 20 * time.Millisecond},
		{"fanout", hs.fanout, 1, 20 * time.Millisecond},
	}
	hosts := map[string]*host{}
	for _, sp := range specs {
		h, err := serve(sp.name, sp.h, sp.maxParallel, sp.delay)
		if err != nil {
			closeHosts(hosts)
			return nil, fmt.Errorf("serving %s: %w", sp.name, err)
		}
		hosts[sp.name] = h
	}
	// Its sitemaps name their children by absolute URL; no request comes before the service starts.
	hs.fanout.base = hosts["fanout"].URL
	return hosts, nil
}

func closeHosts(hosts map[string]*host) {
	for _, h := range hosts {
		h.close()
	}
}
