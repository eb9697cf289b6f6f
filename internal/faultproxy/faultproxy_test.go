package faultproxy_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// guard bounds a wait that only a broken proxy makes endless.
const guard = 2 * time.Minute

// client never reuses a connection, so each request meets the fault as set.
var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

func do(method, u, body string) (*http.Response, []byte, error) {
	req, err := http.NewRequest(method, u, strings.NewReader(body))
	if err != nil {
		return nil, nil, err
	}
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := client.Do(req)
	if err != nil {
		return nil, nil, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return res, raw, err
}

func health(p *faultproxy.Proxy) error {
	res, _, err := do(http.MethodGet, p.URL+"/_cluster/health", "")
	if err != nil {
		return err
	}
	if res.StatusCode != http.StatusOK || res.Header.Get("X-Elastic-Product") != "Elasticsearch" {
		return fmt.Errorf("health through the proxy: %s, product %q", res.Status, res.Header.Get("X-Elastic-Product"))
	}
	return nil
}

func TestPassForwardsEveryRequestToTheNode(t *testing.T) {
	p := estest.Proxy(t)
	if err := health(p); err != nil {
		t.Fatal(err)
	}
	if st := p.Stats(); st.Requests != 1 || st.Faulted != 0 {
		t.Errorf("stats after one passed request: %+v", st)
	}
}

func TestRefuseRefusesConnectionsUntilSwitchedBack(t *testing.T) {
	p := estest.Proxy(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Refuse})
	if err := health(p); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Fatalf("while refusing: %v, want connection refused", err)
	}
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	if err := health(p); err != nil {
		t.Fatalf("after switching back: %v", err)
	}
}

func TestDropClosesTheConnectionWithoutAnAnswer(t *testing.T) {
	p := estest.Proxy(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Drop})
	err := health(p)
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("dropped request: %v, want EOF or a reset", err)
	}
	if st := p.Stats(); st.Faulted != 1 {
		t.Errorf("stats after one dropped request: %+v", st)
	}
}

func TestStallHoldsARequestUnansweredUntilClose(t *testing.T) {
	p := estest.Proxy(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Stall})
	stalled := make(chan error, 1)
	go func() { stalled <- health(p) }()
	ctx, cancel := context.WithTimeout(context.Background(), guard)
	defer cancel()
	if err := p.Await(ctx, func(s faultproxy.Stats) bool { return s.Faulted == 1 }); err != nil {
		t.Fatal(err)
	}
	// Switched off, the proxy answers new requests, but the stalled one
	// stays without an answer, as a connection to a vanished node does.
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Pass})
	if err := health(p); err != nil {
		t.Fatalf("a new request after the stall: %v", err)
	}
	select {
	case err := <-stalled:
		t.Fatalf("the stalled request was answered (%v) before Close", err)
	default:
	}
	p.Close()
	select {
	case err := <-stalled:
		if err == nil {
			t.Fatal("the stalled request got an answer from Close, want an error")
		}
	case <-time.After(guard):
		t.Fatal("Close did not release the stalled request")
	}
}

func TestStatusAnswersEveryRequestWithAnElasticsearchError(t *testing.T) {
	p := estest.Proxy(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Status, Status: http.StatusTooManyRequests})
	res, raw, err := do(http.MethodGet, p.URL+"/_cluster/health", "")
	if err != nil {
		t.Fatal(err)
	}
	var body struct {
		Error struct {
			Type string `json:"type"`
		} `json:"error"`
		Status int `json:"status"`
	}
	if err := json.Unmarshal(raw, &body); err != nil {
		t.Fatalf("body %s: %v", raw, err)
	}
	if res.StatusCode != http.StatusTooManyRequests || body.Status != 429 || body.Error.Type != "es_rejected_execution_exception" {
		t.Errorf("answer %s %s", res.Status, raw)
	}
}

type item struct {
	ID     string `json:"_id"`
	Status int    `json:"status"`
	Error  struct {
		Type string `json:"type"`
	} `json:"error"`
}

// bulk indexes one document per id through the proxy and returns each
// item's answer by id.
func bulk(t *testing.T, p *faultproxy.Proxy, index string, ids ...string) map[string]item {
	t.Helper()
	var b strings.Builder
	for _, id := range ids {
		fmt.Fprintf(&b, "{\"index\":{\"_id\":%q}}\n{\"n\":%q}\n", id, id)
	}
	res, raw, err := do(http.MethodPost, p.URL+"/"+index+"/_bulk?refresh=true", b.String())
	if err != nil {
		t.Fatal(err)
	}
	var answer struct {
		Errors bool                         `json:"errors"`
		Items  []map[string]json.RawMessage `json:"items"`
	}
	if res.StatusCode != http.StatusOK || json.Unmarshal(raw, &answer) != nil || len(answer.Items) != len(ids) {
		t.Fatalf("bulk answer %s %s", res.Status, raw)
	}
	out := map[string]item{}
	for i, m := range answer.Items {
		var it item
		if err := json.Unmarshal(m["index"], &it); err != nil || it.ID != ids[i] {
			t.Fatalf("item %d of %s: %+v %v", i, raw, it, err)
		}
		out[it.ID] = it
	}
	return out
}

// stored says whether the node holds the document, asked directly.
func stored(t *testing.T, index, id string) bool {
	t.Helper()
	res, _, err := do(http.MethodGet, estest.URL(t)+"/"+index+"/_doc/"+id, "")
	if err != nil {
		t.Fatal(err)
	}
	return res.StatusCode == http.StatusOK
}

func TestFailItemsFailsTheNextNItemsWhichTheNodeNeverApplies(t *testing.T) {
	p := estest.Proxy(t)
	index := estest.Index(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusServiceUnavailable, Count: 2})
	got := bulk(t, p, index, "a", "b", "c")
	if got["a"].Status != 503 || got["b"].Status != 503 || got["a"].Error.Type != "unavailable_shards_exception" {
		t.Errorf("the first two items: %+v %+v, want 503 unavailable_shards_exception", got["a"], got["b"])
	}
	if got["c"].Status != http.StatusCreated {
		t.Errorf("the third item: %+v, want created by the node", got["c"])
	}
	if stored(t, index, "a") || stored(t, index, "b") || !stored(t, index, "c") {
		t.Errorf("the node holds a %v, b %v, c %v; want only c", stored(t, index, "a"), stored(t, index, "b"), stored(t, index, "c"))
	}
	// Two failed: the next request passes whole.
	if got := bulk(t, p, index, "a", "b"); got["a"].Status != http.StatusCreated || got["b"].Status != http.StatusCreated {
		t.Errorf("after the count ran out: %+v", got)
	}
	if st := p.Stats(); st.Items != 2 {
		t.Errorf("stats: %+v, want 2 items failed", st)
	}
}

func TestFailItemsByIDFailsThoseDocumentsEveryTime(t *testing.T) {
	p := estest.Proxy(t)
	index := estest.Index(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.FailItems, Status: http.StatusBadRequest, IDs: []string{"b"}})
	for round := range 2 {
		got := bulk(t, p, index, "a", "b")
		if got["b"].Status != 400 || got["b"].Error.Type != "mapper_parsing_exception" || got["a"].Status >= 300 {
			t.Errorf("round %d: %+v", round, got)
		}
	}
	// The whole request fails: nothing is forwarded, every item answered.
	if got := bulk(t, p, index, "b"); got["b"].Status != 400 {
		t.Errorf("a request of the failed id alone: %+v", got)
	}
	if stored(t, index, "b") {
		t.Error("the node holds the failed document")
	}
	if st := p.Stats(); st.Items != 3 {
		t.Errorf("stats: %+v, want 3 items failed", st)
	}
}

func TestLoseAnswerAppliesTheChangeOnlyThePathSelectsAndDropsItsAnswer(t *testing.T) {
	p := estest.Proxy(t)
	index := estest.Index(t)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.LoseAnswer, Path: "/_bulk?refresh=true"})
	body := "{\"index\":{\"_id\":\"a\"}}\n{\"n\":\"a\"}\n"
	_, _, err := do(http.MethodPost, p.URL+"/"+index+"/_bulk?refresh=true", body)
	if err == nil || !(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET)) {
		t.Fatalf("a request the path selects: %v, want EOF or a reset", err)
	}
	if !stored(t, index, "a") {
		t.Error("the node does not hold the document whose answer was lost")
	}
	// Health's path is not selected: it passes.
	if err := health(p); err != nil {
		t.Fatalf("a request the path does not select: %v", err)
	}
	if st := p.Stats(); st.Faulted != 1 {
		t.Errorf("stats: %+v, want the one lost answer", st)
	}
}
