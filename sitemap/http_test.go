package sitemap

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// The provider hands Parse a response body; these tests go through a real
// HTTP server and client to cover what servers do to sitemaps in transit.

func TestServedWithWrongContentTypeIsParsedByContent(t *testing.T) {
	type file struct {
		contentType string
		body        []byte
		kind        Kind
		entries     int
	}
	files := map[string]file{
		"/feed":         {"text/html; charset=utf-8", readTestdata(t, "rss2.xml"), RSS, 4},
		"/atom":         {"text/plain", readTestdata(t, "atom.xml"), Atom, 4},
		"/sitemap.xml":  {"application/octet-stream", gzipBytes(t, readTestdata(t, "urlset.xml")), URLSet, 10},
		"/sitemap.txt":  {"application/xml", readTestdata(t, "text.txt"), Text, 4},
		"/index.xml.gz": {"text/xml", readTestdata(t, "index.xml"), Index, 2}, // not compressed after all
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", f.contentType)
		w.Write(f.body)
	}))
	defer srv.Close()
	for path, f := range files {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		res, err := Parse(resp.Body, srv.URL+path, Limits{})
		resp.Body.Close()
		if err != nil {
			t.Errorf("%s: %v", path, err)
			continue
		}
		if n := len(res.URLs) + len(res.Sitemaps); res.Kind != f.kind || n != f.entries {
			t.Errorf("%s served as %s: %v with %d entries, want %v with %d", path, f.contentType, res.Kind, n, f.kind, f.entries)
		}
		if path == "/feed" && res.URLs[2].URL != srv.URL+"/2024/05/relative" {
			t.Errorf("relative RSS link resolved to %q, want it against the feed's URL", res.URLs[2].URL)
		}
	}
}

func TestGzipFileServedWithContentEncodingGzipIsReadWithOrWithoutTransportDecoding(t *testing.T) {
	// A server compressing an already compressed sitemap.xml.gz on the fly.
	body := gzipBytes(t, gzipBytes(t, readTestdata(t, "index.xml")))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/x-gzip")
		w.Header().Set("Content-Encoding", "gzip")
		w.Write(body)
	}))
	defer srv.Close()
	// Go's transport undoes the Content-Encoding when it asked for gzip
	// itself; with compression disabled both layers arrive.
	for _, disable := range []bool{false, true} {
		client := &http.Client{Transport: &http.Transport{DisableCompression: disable}}
		resp, err := client.Get(srv.URL + "/sitemap.xml.gz")
		if err != nil {
			t.Fatal(err)
		}
		res, err := Parse(resp.Body, srv.URL+"/sitemap.xml.gz", Limits{})
		resp.Body.Close()
		client.CloseIdleConnections()
		if err != nil || res.Kind != Index || len(res.Sitemaps) != 2 {
			t.Errorf("DisableCompression %v: %v with %d sitemaps, err %v; want 2 children", disable, res.Kind, len(res.Sitemaps), err)
		}
	}
}
