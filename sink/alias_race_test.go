package sink_test

import (
	"context"
	"net/http"
	"testing"

	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
	"github.com/crawlspace/crawlspace/sink"
)

// Processes sharing a crawl publish the same index at the end of a cycle:
// one may find the alias missing just before another adds it. HEAD on the
// name then answers 200 for the alias, which was taken for a concrete index
// of that name and ended the crawl in error. Here the proxy answers 404 to
// every alias read while the alias exists.
func TestElasticsearchSinkPublishesOverAnAliasAnotherProcessAddedMeanwhile(t *testing.T) {
	esURL := estest.URL(t)
	index := estest.Index(t)
	ctx := context.Background()
	first, err := sink.NewElasticsearch(ctx, esConfig(esURL, index), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Publish(ctx); err != nil {
		t.Fatal(err)
	}
	first.Close(ctx)
	p := estest.Proxy(t)
	second, err := sink.NewElasticsearch(ctx, esConfig(p.URL, index), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer second.Close(ctx)
	estest.SetFault(t, p, faultproxy.Fault{Mode: faultproxy.Status, Status: http.StatusNotFound, Path: "/_alias/"})
	if err := second.Publish(ctx); err != nil {
		t.Fatalf("publishing once another process added the alias: %v", err)
	}
	var aliases map[string]any
	getJSON(t, esURL+"/_alias/"+index, &aliases)
	if _, ok := aliases[second.PhysicalIndex()]; !ok || len(aliases) != 1 {
		t.Errorf("alias %s points at %v, want only %s", index, aliases, second.PhysicalIndex())
	}
}
