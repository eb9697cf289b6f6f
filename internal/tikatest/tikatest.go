// Package tikatest connects tests to the real Apache Tika server that scripts/tika runs.
//
// Tests that need the server call URL. Where it cannot be reached they skip, except under CI (the
// CI environment variable set), where they fail: a CI run must never pass by skipping the tests of
// the Tika reader. This is how package estest treats the Elasticsearch node.
package tikatest

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/servicetest"
)

// EnvURL names the environment variable holding the server's URL; scripts/test sets it.
const EnvURL = "CRAWLSPACE_TIKA_URL"

// EnvPort names the port variable scripts/tika also reads; it sets the default URL.
const EnvPort = "CRAWLSPACE_TIKA_PORT"

// DefaultURL is where scripts/tika start serves when CRAWLSPACE_TIKA_PORT is not set.
const DefaultURL = "http://127.0.0.1:9998"

// probeTimeout bounds the reachability check only: a refused connection answers at once.
const probeTimeout = 10 * time.Second

var server = &servicetest.Server{Name: "the Tika server", Start: "scripts/tika start",
	EnvURL: EnvURL, EnvPort: EnvPort, DefaultURL: DefaultURL, Probe: probe}

// URL returns the server's base URL, without a trailing slash: CRAWLSPACE_TIKA_URL, else port
// CRAWLSPACE_TIKA_PORT on 127.0.0.1, else DefaultURL. The server is checked once per test
// binary; if it cannot be reached the test is skipped, or failed when CI is set.
func URL(t testing.TB) string {
	t.Helper()
	return server.URL(t)
}

// probe asks GET /tika, which tika-server answers with a greeting.
func probe(base string) error {
	c := &http.Client{Timeout: probeTimeout}
	resp, err := c.Get(base + "/tika")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	greeting, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(greeting), "Tika") {
		return fmt.Errorf("GET %s/tika: %s %.100q: not a Tika server", base, resp.Status, greeting)
	}
	return nil
}
