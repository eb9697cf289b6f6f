package provider_test

import (
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
)

func tlsSite(t *testing.T) (*httptest.Server, *atomic.Int32) {
	t.Helper()
	var hits atomic.Int32
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<title>Secure</title><p>over TLS</p>")
	}))
	t.Cleanup(srv.Close)
	return srv, &hits
}

func TestTLSIsVerifiedByDefaultSoAnUnknownCertificateIsRefused(t *testing.T) {
	t.Parallel()
	srv, hits := tlsSite(t)
	cfg, _ := testConfig(t, "", "robots: {obey: false}", srv.URL+"/")
	c, report := crawlKeep(t, cfg)
	if report.Total.Fetched != 0 || report.Total.Errors != 1 {
		t.Errorf("a self-signed certificate was accepted: %+v", report.Total)
	}
	if hits.Load() != 0 {
		t.Errorf("the server answered %d requests over an unverified connection", hits.Load())
	}
	if r := record(t, c, srv.URL+"/"); r.Reason != "tls_error" {
		t.Errorf("refused start URL recorded with reason %q", r.Reason)
	}
}

func TestCustomCAFileLetsTheCrawlerTrustAnInternalCertificate(t *testing.T) {
	t.Parallel()
	srv, hits := tlsSite(t)
	ca := filepath.Join(t.TempDir(), "ca.pem")
	block := &pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}
	if err := os.WriteFile(ca, pem.EncodeToMemory(block), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg, out := testConfig(t, fmt.Sprintf("fetch: {ca_file: %q}", ca), "robots: {obey: false}", srv.URL+"/")
	_, report := crawlKeep(t, cfg)
	if report.Total.Fetched != 1 || hits.Load() != 1 {
		t.Fatalf("with the CA file the page was not fetched: %+v, %d hits", report.Total, hits.Load())
	}
	raw, err := os.ReadFile(out)
	if err != nil || len(raw) == 0 {
		t.Fatalf("no document written: %v", err)
	}
}

func TestProxyCarriesEveryRequest(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "Home", `<a href="/a">a</a>`)
	site.html("/a", "A", "a page")
	var proxied atomic.Int32
	// A forward proxy: requests arrive with absolute URIs and are passed on.
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !r.URL.IsAbs() {
			http.Error(w, "not a proxy request", http.StatusBadRequest)
			return
		}
		proxied.Add(1)
		req, _ := http.NewRequest(r.Method, r.URL.String(), nil)
		req.Header = r.Header.Clone()
		res, err := http.DefaultTransport.RoundTrip(req)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer res.Body.Close()
		for k, v := range res.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(res.StatusCode)
		io.Copy(w, res.Body)
	}))
	defer proxy.Close()
	cfg, _ := testConfig(t, fmt.Sprintf("fetch: {proxy: %q}", proxy.URL), "", site.URL+"/")
	_, report := crawlKeep(t, cfg)
	if report.Total.Fetched != 2 {
		t.Fatalf("fetched %d pages through the proxy, want 2 (%+v)", report.Total.Fetched, report.Total)
	}
	// robots.txt and both pages went through the proxy.
	if got := proxied.Load(); got != 3 {
		t.Errorf("the proxy carried %d requests, want 3 (robots.txt and two pages)", got)
	}
}

func TestRobotsTxtBehindBasicAuthIsReadWithTheSourcesCredentials(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	authed := func(r *http.Request) bool {
		u, p, ok := r.BasicAuth()
		return ok && u == "crawler" && p == "s3cret"
	}
	site.handle("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		if !authed(r) {
			http.Error(w, "who are you", http.StatusUnauthorized)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /secret\n")
	})
	site.html("/", "Home", `<a href="/secret">secret</a> <a href="/open">open</a>`)
	site.html("/open", "Open", "open page")
	site.html("/secret", "Secret", "secret page")
	cfg, _ := testConfig(t, "", "auth: {username: crawler, password: s3cret}", site.URL+"/")
	c, _ := crawlKeep(t, cfg)
	if r := record(t, c, site.URL+"/secret"); r.Reason != "robots" {
		t.Errorf("/secret recorded %s %q: robots.txt behind auth was not obeyed", r.State, r.Reason)
	}
	site.mu.Lock()
	defer site.mu.Unlock()
	if site.hits["/secret"] != 0 {
		t.Errorf("/secret was requested %d times", site.hits["/secret"])
	}
}
