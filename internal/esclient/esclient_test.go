package esclient

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// A server whose successful answers do not say they come from Elasticsearch is refused, as
// go-elasticsearch refuses it, so a wrong address is an error and not a silent crawl into it.
func TestAServerThatIsNotElasticsearchIsRefused(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	c, err := New(Config{Addresses: []string{srv.URL}})
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Info()
	if err == nil || !strings.Contains(err.Error(), "not Elasticsearch") {
		t.Fatalf("Info from a server that is not Elasticsearch: %v, want the unknown-product error", err)
	}
}

// Each request carries go-elasticsearch's headers and the configured credentials: the API key
// over a username and password, the address's own credentials over the configured ones.
func TestRequestsCarryTheClientsHeadersAndCredentials(t *testing.T) {
	srv, got := recordingNode(t)
	for _, tc := range []struct {
		name string
		cfg  Config
		auth string
	}{
		{"basic", Config{Addresses: []string{srv.URL}, Username: "crawler", Password: "s3cret"}, "Basic Y3Jhd2xlcjpzM2NyZXQ="},
		{"api key", Config{Addresses: []string{srv.URL}, Username: "crawler", Password: "s3cret", APIKey: "a2V5"}, "APIKey a2V5"},
		{"in the address", Config{Addresses: []string{strings.Replace(srv.URL, "//", "//crawler:s3cret@", 1)}}, "Basic Y3Jhd2xlcjpzM2NyZXQ="},
	} {
		c, err := New(tc.cfg)
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Info(c.Info.WithContext(context.Background()))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		res.Body.Close()
		r := got.Load()
		if a := r.Header.Get("Authorization"); a != tc.auth {
			t.Errorf("%s: Authorization %q, want %q", tc.name, a, tc.auth)
		}
		if ua := r.Header.Get("User-Agent"); !strings.HasPrefix(ua, "go-elasticsearch/8.") {
			t.Errorf("%s: User-Agent %q, want go-elasticsearch's", tc.name, ua)
		}
		if m := r.Header.Get("X-Elastic-Client-Meta"); !strings.HasPrefix(m, "es=8.") || !strings.Contains(m, ",t=8.") {
			t.Errorf("%s: X-Elastic-Client-Meta %q, want the client's and the transport's versions", tc.name, m)
		}
	}
}

// DisableRetry leaves a 503 to the caller, who retries with its own backoff; without it the
// transport retries, as go-elasticsearch's does.
func TestDisableRetryLeavesUnavailableToTheCaller(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	for _, tc := range []struct {
		disable bool
		want    int32
	}{{true, 1}, {false, 4}} {
		calls.Store(0)
		c, err := New(Config{Addresses: []string{srv.URL}, DisableRetry: tc.disable})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Info()
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusServiceUnavailable || calls.Load() != tc.want {
			t.Errorf("DisableRetry %v: %d after %d requests, want 503 after %d", tc.disable, res.StatusCode, calls.Load(), tc.want)
		}
	}
}

// ELASTIC_CLIENT_APIVERSIONING=true asks for version 8's API of a newer node, as go-elasticsearch
// asks for it: the Accept header and, on a request with a body, the Content-Type.
func TestTheCompatibilityHeaderIsSentWhenTheEnvironmentAsksForIt(t *testing.T) {
	srv, got := recordingNode(t)
	for _, on := range []bool{false, true} {
		if on {
			t.Setenv("ELASTIC_CLIENT_APIVERSIONING", "true")
		}
		c, err := New(Config{Addresses: []string{srv.URL}})
		if err != nil {
			t.Fatal(err)
		}
		res, err := c.Search(c.Search.WithBody(strings.NewReader(`{}`)))
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		r := got.Load()
		accept, ctype := r.Header.Get("Accept"), r.Header.Get("Content-Type")
		compat := accept == compatibilityHeader && ctype == compatibilityHeader
		if compat != on {
			t.Errorf("ELASTIC_CLIENT_APIVERSIONING set %v: Accept %q, Content-Type %q", on, accept, ctype)
		}
	}
}

// recordingNode serves as an Elasticsearch node answering {} to everything, and keeps the last
// request it received; it is closed when the test ends.
func recordingNode(t *testing.T) (*httptest.Server, *atomic.Pointer[http.Request]) {
	var got atomic.Pointer[http.Request]
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got.Store(r)
		w.Header().Set("X-Elastic-Product", "Elasticsearch")
		w.Write([]byte(`{}`))
	}))
	t.Cleanup(srv.Close)
	return srv, &got
}

func TestAClientNeedsAnAddress(t *testing.T) {
	if _, err := New(Config{}); err == nil || !strings.Contains(err.Error(), "no address") {
		t.Fatalf("New without an address: %v, want an error saying so", err)
	}
}
