// Package estest connects tests to the real Elasticsearch node that scripts/elasticsearch runs,
// and gives each test index names of its own that are deleted when the test ends.
//
// Tests that need the node call URL, Client or Index. Where the node cannot be reached they skip,
// except under CI (the CI environment variable set), where they fail: a CI run must never pass by
// skipping the tests that matter most.
package estest

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/servicetest"
)

// EnvURL names the environment variable holding the node's URL; scripts/test sets it.
const EnvURL = "CRAWLSPACE_ES_URL"

// EnvPort names the port variable scripts/elasticsearch also reads; it sets the default URL.
const EnvPort = "CRAWLSPACE_ES_PORT"

// DefaultURL is where scripts/elasticsearch start serves when CRAWLSPACE_ES_PORT is not set.
const DefaultURL = "http://127.0.0.1:9200"

// probeTimeout bounds the reachability check only: a refused connection answers at once, and a
// node that takes longer than this for _cluster/health is not one to run tests against.
const probeTimeout = 10 * time.Second

var (
	probeOnce sync.Once
	probedURL string
	probeErr  error
)

// httpClient serves the harness's own requests; tests use Client for theirs.
var httpClient = &http.Client{Timeout: 30 * time.Second}

// URL returns the node's base URL, without a trailing slash: CRAWLSPACE_ES_URL, else port
// CRAWLSPACE_ES_PORT on 127.0.0.1, else DefaultURL.
// The node is checked once per test binary; if it cannot be reached the test is skipped, or failed
// when CI is set. Under go test -short the node is used only when those variables name it.
func URL(t testing.TB) string {
	t.Helper()
	servicetest.SkipShort(t, "Elasticsearch", EnvURL, EnvPort)
	probeOnce.Do(func() {
		probedURL = strings.TrimRight(os.Getenv(EnvURL), "/")
		if probedURL == "" {
			probedURL = DefaultURL
			if port := os.Getenv(EnvPort); port != "" {
				probedURL = "http://127.0.0.1:" + port
			}
		}
		probeErr = probe(probedURL)
	})
	if probeErr != nil {
		if inCI() {
			t.Fatalf("Elasticsearch is required in CI: %v", probeErr)
		}
		t.Skipf("Elasticsearch not reachable (%v); run scripts/elasticsearch start, or scripts/test", probeErr)
	}
	return probedURL
}

// Client returns a client (go-elasticsearch's esapi, through esclient) for the node, as URL decides.
func Client(t testing.TB) *esclient.Client {
	t.Helper()
	c, err := esclient.New(esclient.Config{Addresses: []string{URL(t)}})
	if err != nil {
		t.Fatalf("elasticsearch client: %v", err)
	}
	return c
}

// Index returns a name unique to this test run, valid as an index, alias or template name, and
// registers a cleanup that deletes every index, alias and index template whose name starts with
// it. Tests may therefore create several ("<name>", "<name>-v1", ...) and leave them all behind.
func Index(t testing.TB) string {
	t.Helper()
	base := URL(t)
	name := IndexName(t.Name())
	t.Cleanup(func() {
		if err := (node{base: base, client: httpClient}).deleteAll(name); err != nil {
			t.Errorf("estest cleanup of %s*: %v", name, err)
		}
	})
	return name
}

// IndexName derives a fresh name from a test name: lower case, only characters Elasticsearch
// accepts in index names, never starting with '-', '_' or '+', short enough to take suffixes,
// and ending with a random part so parallel runs and repeated calls never collide.
func IndexName(testName string) string {
	var b strings.Builder
	dash := false
	for _, r := range strings.ToLower(testName) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			if dash && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(r)
			dash = false
			continue
		}
		// Runs of anything else (subtest slashes, spaces, '#', non-ASCII) become one '-'.
		dash = true
	}
	stem := b.String()
	const maxStem = 100 // well under the 255-byte limit, leaving room for the suffix and versions
	if len(stem) > maxStem {
		stem = strings.TrimRight(stem[:maxStem], "-")
	}
	if stem == "" {
		stem = "test"
	}
	var random [4]byte
	if _, err := rand.Read(random[:]); err != nil {
		panic(err) // crypto/rand does not fail on supported platforms
	}
	return stem + "-" + hex.EncodeToString(random[:])
}

func inCI() bool { return servicetest.InCI() }

func probe(base string) error {
	c := &http.Client{Timeout: probeTimeout}
	resp, err := c.Get(base + "/_cluster/health")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s/_cluster/health: %s", base, resp.Status)
	}
	return nil
}

// deleteAll removes what a test left under prefix. Wildcard deletes are refused by default
// (action.destructive_requires_name), so it lists concrete names first and deletes those.
func (n node) deleteAll(prefix string) error {
	pattern := url.PathEscape(prefix + "*")

	// Aliases go first: one may point at an index outside the prefix, which must survive.
	var aliases map[string]struct {
		Aliases map[string]json.RawMessage `json:"aliases"`
	}
	if err := n.do(http.MethodGet, "/_alias/"+pattern+"?expand_wildcards=all", nil, &aliases); err != nil {
		return err
	}
	for index, a := range aliases {
		if strings.HasPrefix(index, prefix) {
			continue // goes with its index below
		}
		for alias := range a.Aliases {
			if err := n.do(http.MethodDelete, "/"+url.PathEscape(index)+"/_alias/"+url.PathEscape(alias), nil, nil); err != nil {
				return err
			}
		}
	}

	var indices []struct {
		Index string `json:"index"`
	}
	if err := n.do(http.MethodGet, "/_cat/indices/"+pattern+"?format=json&h=index&expand_wildcards=all", nil, &indices); err != nil {
		return err
	}
	if len(indices) > 0 {
		names := make([]string, len(indices))
		for i, ix := range indices {
			names[i] = url.PathEscape(ix.Index)
		}
		if err := n.do(http.MethodDelete, "/"+strings.Join(names, ","), nil, nil); err != nil {
			return err
		}
	}

	var templates struct {
		IndexTemplates []struct {
			Name string `json:"name"`
		} `json:"index_templates"`
	}
	if err := n.do(http.MethodGet, "/_index_template/"+pattern, nil, &templates); err != nil {
		return err
	}
	for _, tpl := range templates.IndexTemplates {
		if err := n.do(http.MethodDelete, "/_index_template/"+url.PathEscape(tpl.Name), nil, nil); err != nil {
			return err
		}
	}
	return nil
}

// do sends one request, with body as JSON if not nil; a 404 counts as success with nothing
// decoded, since "nothing matched" is the normal answer for a test that created nothing.
func (n node) do(method, path string, body, out any) error {
	req, err := n.request(method, path, body)
	if err != nil {
		return err
	}
	resp, err := n.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	answer, err := io.ReadAll(resp.Body)
	if err != nil {
		return fmt.Errorf("%s %s: %w", method, path, err)
	}
	switch {
	case resp.StatusCode == http.StatusNotFound:
		return nil
	case resp.StatusCode >= 300:
		return fmt.Errorf("%s %s: %s: %s", method, path, resp.Status, answer)
	case out != nil:
		if err := json.Unmarshal(answer, out); err != nil {
			return fmt.Errorf("%s %s: decoding %q: %w", method, path, answer, err)
		}
	}
	return nil
}
