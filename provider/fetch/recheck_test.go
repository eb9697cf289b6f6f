package fetch

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// sourceFor builds the fetch layer of a source whose start URL is base,
// loaded the way crawlspace loads its config, loopback allowed.
func sourceFor(t testing.TB, base string) *Source {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "crawlspace.yaml")
	yaml := fmt.Sprintf("state_dir: %s\noutput: {file: %s}\nallow_private_networks: true\nsources:\n  - name: s\n    start_urls: [%q]\n",
		filepath.Join(dir, "state"), filepath.Join(dir, "docs.ndjson"), base+"/")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	rs, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg, &cfg.Sources[0], rs.Source("s"), Options{Accept: "text/html"})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func conditionalOn(etag string) http.Header {
	h := http.Header{}
	h.Set("If-None-Match", etag)
	return h
}

// A re-crawl is mostly conditional GETs answered 304: each must go out on
// a kept-alive connection, or every check pays a connection's set-up on
// both sides. Both ways a page request can take are checked: a plain URL
// (rechecked without colly) and one colly must request (an apostrophe in
// its query).
func TestConditionalGetsAnswered304ReuseTheirConnections(t *testing.T) {
	var conns, requests atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Header().Set("ETag", `"v1"`)
		if r.Header.Get("If-None-Match") == `"v1"` {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		fmt.Fprint(w, "<html><body>changed</body></html>")
	}))
	srv.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	s := sourceFor(t, srv.URL)

	const workers, each = 8, 100
	for _, query := range []string{"?p=%d", "?p='%d'"} {
		conns.Store(0)
		requests.Store(0)
		var wg sync.WaitGroup
		for w := range workers {
			wg.Go(func() {
				for i := range each {
					u := srv.URL + "/page" + fmt.Sprintf(query, w*each+i)
					if res := s.Page(context.Background(), u, conditionalOn(`"v1"`)); res.Status != http.StatusNotModified || res.Err != nil {
						t.Errorf("%s: status %d, err %v; want 304", u, res.Status, res.Err)
						return
					}
				}
			})
		}
		wg.Wait()
		// A connection may be dialed for a request that an idle one then
		// serves, so up to twice the workers; one a request is the fault.
		if got := conns.Load(); requests.Load() != workers*each || got > 2*workers {
			t.Errorf("query %s: %d requests on %d new connections, want %d on at most %d",
				query, requests.Load(), got, workers*each, 2*workers)
		}
	}
}

// seenBy records the request line each path arrives as.
type seenBy struct {
	mu   sync.Mutex
	last string
}

func (s *seenBy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.last = r.Host + " " + r.RequestURI
	s.mu.Unlock()
	w.Header().Set("ETag", `"v1"`)
	w.WriteHeader(http.StatusNotModified)
}

func (s *seenBy) take() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	v := s.last
	s.last = ""
	return v
}

// A recheck must reach the server as the page's first request did,
// through colly: same host, same request target, byte for byte, for every
// normalized URL it takes instead of colly.
func FuzzRecheckAsksForWhatCollyAskedFor(f *testing.F) {
	for _, s := range []string{
		"a/../b?z=1&a=2#f", "%7e", "ä?x", "b/./c/%2e%2e/d", "?&&=&", "%zz?%", ";x=1?y=%41",
		"x?q=a+b&r=%2B", "é?é=é#é", "[x]?[y]", "b%2fc", "..;/", "%7e%7E", "x@y:z!$*(),;+=&",
		"%00", "%25", "?%25%41", "b?c=d;e", ".../", "/b//c", "b?#", "?=", "%F0%9F%98%80", "~u/",
		"b c?d e'f\"g<h>`i{j}|k^l",
	} {
		f.Add(s)
	}
	seen := &seenBy{}
	srv := httptest.NewServer(seen)
	f.Cleanup(srv.Close)
	s := sourceFor(f, srv.URL)
	f.Fuzz(func(t *testing.T, tail string) {
		u, err := urlnorm.Normalize(srv.URL + "/" + tail)
		if err != nil || !strings.HasPrefix(u, srv.URL+"/") {
			return
		}
		// Unconditional, the request goes through colly.
		if res := s.Page(context.Background(), u, http.Header{}); res.Err != nil {
			return // colly refuses it: so does the recheck, through colly too
		}
		first := seen.take()
		res := s.Page(context.Background(), u, conditionalOn(`"v1"`))
		if again := seen.take(); res.Err != nil || again != first {
			t.Fatalf("%s: colly asked for %q, the recheck (plain: %v) for %q (err %v)", u, first, plainURL(u), again, res.Err)
		}
	})
}
