package crawltest

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
)

// VanishingSite serves on loopback a home page linking n pages, /p/0 to
// /p/n-1, until gone is set; from then on it answers 404 everywhere, as a
// site whose every document a cycle would delete. It is closed when the
// test ends.
func VanishingSite(t testing.TB, n int, gone *atomic.Bool) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if gone.Load() {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body><p>Page %s.</p>", r.URL.Path, r.URL.Path)
		if r.URL.Path == "/" {
			for i := range n {
				fmt.Fprintf(w, `<a href="/p/%d">%d</a> `, i, i)
			}
		}
		io.WriteString(w, "</body></html>")
	}))
	t.Cleanup(srv.Close)
	return srv
}
