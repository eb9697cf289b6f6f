package estest

import (
	"context"
	"io"
	"net"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8/esapi"

	"github.com/crawlspace/crawlspace/internal/esclient"
)

// validName is stricter than Elasticsearch's rules (lower case, no \ / * ? " < > | space , #,
// not starting with - _ +, at most 255 bytes): what IndexName promises.
var validName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]*-[0-9a-f]{8}$`)

func TestIndexNameIsLowerCaseValidAndUniqueForAnyTestName(t *testing.T) {
	for _, testName := range []string{
		"TestPlain",
		"TestSub/Case_With Spaces#01",
		"Test/ÜnïCödé/日本",
		"---",
		"",
		"_Leading/+Plus/-Dash",
		strings.Repeat("TestVeryLong/", 50),
	} {
		a, b := IndexName(testName), IndexName(testName)
		if !validName.MatchString(a) || len(a) > 120 {
			t.Errorf("IndexName(%q) = %q: not a valid lower-case index name of bounded length", testName, a)
		}
		if a == b {
			t.Errorf("IndexName(%q) gave %q twice; names must not collide", testName, a)
		}
	}
}

func TestNodeAcceptsIndexNamesFromAwkwardSubtestNames(t *testing.T) {
	es := Client(t)
	for _, sub := range []string{"Mixed Case", "slash/and#hash", "ÜnïCödé", "dots.and_underscores"} {
		t.Run(sub, func(t *testing.T) {
			name := Index(t)
			createIndex(t, es, name, "")
		})
	}
}

func TestCleanupDeletesIndicesAliasesAndTemplatesStartingWithTheName(t *testing.T) {
	es := Client(t)
	// An index the inner test does not own, with one of the inner test's aliases on it: the alias
	// must go, the index must stay.
	outside := Index(t)
	createIndex(t, es, outside, "")

	var name string
	t.Run("inner", func(t *testing.T) {
		name = Index(t)
		createIndex(t, es, name+"-v1", `{"aliases":{"`+name+`":{}}}`)
		createIndex(t, es, name+"-v2", "")
		mustOK(t)(es.Indices.PutAlias([]string{outside}, name+"-extra"))
		mustOK(t)(es.Indices.PutIndexTemplate(name+"-tpl",
			strings.NewReader(`{"index_patterns":["`+name+`-tpl-*"]}`)))
		mustOK(t)(es.Indices.Exists([]string{name + "-v1", name + "-v2", name}))
	})
	if t.Failed() {
		return
	}

	for _, gone := range []string{name + "-v1", name + "-v2"} {
		if code := status(t)(es.Indices.Exists([]string{gone})); code != http.StatusNotFound {
			t.Errorf("index %s after cleanup: HTTP %d, want 404", gone, code)
		}
	}
	for _, gone := range []string{name, name + "-extra"} {
		if code := status(t)(es.Indices.ExistsAlias([]string{gone})); code != http.StatusNotFound {
			t.Errorf("alias %s after cleanup: HTTP %d, want 404", gone, code)
		}
	}
	if code := status(t)(es.Indices.ExistsIndexTemplate(name + "-tpl")); code != http.StatusNotFound {
		t.Errorf("index template %s-tpl after cleanup: HTTP %d, want 404", name, code)
	}
	if code := status(t)(es.Indices.Exists([]string{outside})); code != http.StatusOK {
		t.Errorf("index %s, not under the cleaned name, after cleanup: HTTP %d, want 200", outside, code)
	}
}

func TestProbeReportsANodeThatIsNotListening(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	if err := probe("http://" + addr); err == nil {
		t.Errorf("probe of %s, where nothing listens, reported the node reachable", addr)
	}
}

func createIndex(t *testing.T, es *esclient.Client, name, body string) {
	t.Helper()
	opts := []func(*esapi.IndicesCreateRequest){es.Indices.Create.WithContext(context.Background())}
	if body != "" {
		opts = append(opts, es.Indices.Create.WithBody(strings.NewReader(body)))
	}
	mustOK(t)(es.Indices.Create(name, opts...))
}

// mustOK and status take the (response, error) pair of an esapi call directly:
// mustOK(t)(es.Indices.Create(name)).
func mustOK(t *testing.T) func(*esapi.Response, error) {
	return func(resp *esapi.Response, err error) {
		t.Helper()
		checkOK(t, resp, err)
	}
}

func checkOK(t *testing.T, resp *esapi.Response, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.IsError() {
		body, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s: %s", resp.Status(), body)
	}
}

func status(t *testing.T) func(*esapi.Response, error) int {
	return func(resp *esapi.Response, err error) int {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
}
