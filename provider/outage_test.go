package provider_test

import (
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
)

// outagePort is the HTTP port of the node this test stops and starts; it
// is its own node so the other tests keep theirs.
const outagePort = "9277"

// esScript runs scripts/elasticsearch for the outage node.
func esScript(t *testing.T, verb string) (string, error) {
	t.Helper()
	cmd := exec.Command(filepath.Join("..", "scripts", "elasticsearch"), verb)
	cmd.Env = append(os.Environ(), "CRAWLSPACE_ES_PORT="+outagePort)
	out, err := cmd.Output()
	return strings.TrimSpace(string(out)), err
}

// TestElasticsearchStoppedMidCrawlDelaysDocumentsAndLosesNone stops the node
// with the harness script while a crawl is writing to it and starts it
// again: the crawl ends with every page indexed once, under its own id.
func TestElasticsearchStoppedMidCrawlDelaysDocumentsAndLosesNone(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("starts and stops its own Elasticsearch node")
	}
	out, err := esScript(t, "start")
	var exit *exec.ExitError
	if errors.As(err, &exit) && exit.ExitCode() == 3 && os.Getenv("CI") == "" {
		t.Skipf("Java or Maven missing: %s", exit.Stderr)
	}
	if err != nil {
		t.Fatalf("scripts/elasticsearch start on port %s: %v %s", outagePort, err, out)
	}
	lines := strings.Split(out, "\n")
	esURL := lines[len(lines)-1]
	index := "outage-" + fmt.Sprint(time.Now().UnixNano())
	t.Cleanup(func() {
		// The node keeps its data dir between runs: leave no index behind.
		var aliases map[string]any
		getJSONTest(t, esURL+"/_alias/"+index, &aliases)
		for name := range aliases {
			req, _ := http.NewRequest(http.MethodDelete, esURL+"/"+name, nil)
			if res, err := http.DefaultClient.Do(req); err == nil {
				res.Body.Close()
			}
		}
		esScript(t, "stop")
	})

	// The pages past the tenth are answered once the node is down, so the
	// crawl goes on fetching through the outage; the node starts again
	// once a page has been answered while it was down. (Not once every
	// page has: nothing promises the crawl fetches on while its writes
	// wait.)
	const pages, beforeStop = 40, 10
	var asked atomic.Int32
	var fetchedWhileDown sync.Once
	stopAt, down, whileDown := make(chan struct{}), make(chan struct{}), make(chan struct{})
	site := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
			return
		case "/":
			w.Header().Set("Content-Type", "text/html")
			for i := range pages - 1 {
				fmt.Fprintf(w, `<a href="/p%d">p%d</a> `, i, i)
			}
			return
		}
		n := asked.Add(1)
		switch {
		case n == beforeStop:
			close(stopAt)
		case n > beforeStop:
			<-down
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<title>%s</title><p>page %s</p>", r.URL.Path, r.URL.Path)
		if n > beforeStop {
			fetchedWhileDown.Do(func() { close(whileDown) })
		}
	}))
	defer site.Close()
	// The pages held until the node is down wait as long as its stop takes.
	cfg := crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 100ms}
allow_private_networks: true
fetch: {concurrency: 2, timeout: 1h, response_header_timeout: 1h}
sources:
  - name: site
    start_urls: [%q]
`, esURL, index, site.URL+"/"))

	outage := make(chan error, 1)
	go func() {
		<-stopAt
		out, err := esScript(t, "stop")
		close(down) // the held pages are answered even when the stop failed
		if err != nil {
			outage <- fmt.Errorf("stop: %v %s", err, out)
			return
		}
		<-whileDown // documents kept coming while the node was down
		if out, err := esScript(t, "start"); err != nil {
			outage <- fmt.Errorf("start again: %v %s", err, out)
			return
		}
		outage <- nil
	}()
	report := crawl(t, cfg)
	if err := <-outage; err != nil {
		t.Fatal(err)
	}

	docs := searchAll(t, esURL, index)
	var got, want []string
	for id := range docs {
		got = append(got, id)
	}
	want = append(want, docfields.ID(site.URL+"/"))
	for i := range pages - 1 {
		want = append(want, docfields.ID(fmt.Sprintf("%s/p%d", site.URL, i)))
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("after the outage the index holds %d documents, want %d (report %+v)", len(got), len(want), report.Total)
	}
	if report.Total.IndexFailures != 0 || report.Total.Created+report.Total.Updated < pages {
		t.Errorf("report after the outage: %+v", report.Total)
	}
}
