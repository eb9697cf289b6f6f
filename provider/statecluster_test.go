package provider_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

// The documents go to the open node, the crawl's state to the secured one
// (cluster.elasticsearch: HTTPS verified against its CA, a user whose role
// reaches only the state's indices).
func TestStateInAnotherClusterStaysThereAndTheDocumentsClusterHoldsOnlyTheDocuments(t *testing.T) {
	sec := estest.Secure(t)
	prefix := sec.Index(t) + "-state"
	// What the state store needs: creating its indices and refreshing
	// them (manage), its writes (write), its reads (read).
	sec.SetRole(t, prefix+"*", []string{"manage", "write", "read"})
	docsURL, index := estest.URL(t), estest.Index(t)
	site := faultSite(t)
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
cluster:
  state_index: %s
  node_name: solo
  partitions: 4
  lease_ttl: 5s
  elasticsearch: {addresses: [%q], ca_file: %q, username: %s, password: %q, replicas: 0}
allow_private_networks: true
log: {level: debug}
sources:
  - name: s
    start_urls: [%q]
`, docsURL, index, prefix, sec.URL, sec.CAFile, sec.User, sec.Password, site.URL+"/"))
	var logs syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))
	report, err := c.Crawl(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := allIDs(site.URL)
	if n := report.Total.Created + report.Total.Updated; n != len(want) || report.Total.IndexFailures != 0 {
		t.Errorf("report counts %d written, %d failed, want %d written", n, report.Total.IndexFailures, len(want))
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	// The documents' node: every page's document, and no state index.
	var got []string
	for id := range searchAll(t, docsURL, index) {
		got = append(got, id)
	}
	slices.Sort(got)
	if !slices.Equal(got, want) {
		t.Errorf("the documents' node holds %d documents, want %d", len(got), len(want))
	}
	for _, suffix := range []string{"-urls", "-links", "-meta"} {
		res, err := http.Head(docsURL + "/" + prefix + suffix)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		if res.StatusCode != http.StatusNotFound {
			t.Errorf("the documents' node has %s%s: HTTP %d, want 404", prefix, suffix, res.StatusCode)
		}
	}

	// The state's node: every page fetched and acknowledged, and the cycle.
	var urls struct {
		Hits struct {
			Hits []struct {
				Source struct {
					URL     string `json:"url"`
					State   int    `json:"state"`
					Indexed bool   `json:"indexed"`
					Pending string `json:"pending"`
				} `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	sec.Admin(t, http.MethodPost, "/"+prefix+"-*/_refresh", nil, nil)
	sec.Admin(t, http.MethodGet, "/"+prefix+"-urls/_search?size=1000", nil, &urls)
	if len(urls.Hits.Hits) != len(want) {
		t.Errorf("the state's node holds %d URLs, want %d", len(urls.Hits.Hits), len(want))
	}
	for _, h := range urls.Hits.Hits {
		if s := h.Source; frontier.State(s.State) != frontier.Fetched || !s.Indexed || s.Pending != "" {
			t.Errorf("%s in the state's node: state %v, indexed %v, pending %q; want fetched, indexed, nothing pending",
				s.URL, frontier.State(s.State), s.Indexed, s.Pending)
		}
	}
	var meta struct {
		Count int `json:"count"`
	}
	sec.Admin(t, http.MethodGet, "/"+prefix+"-meta/_count", nil, &meta)
	if meta.Count == 0 {
		t.Error("the state's node has no cycle, lease or member document")
	}
	if strings.Contains(logs.String(), sec.Password) {
		t.Error("the log holds the state cluster's password")
	}
}
