package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
)

const resumeEnv = "CRAWLSPACE_RESUME_CHILD_CONFIG"

// TestKilledCrawlChild is the crawl the resume test kills: one cycle of the
// config named by the environment, in a process of its own.
func TestKilledCrawlChild(t *testing.T) {
	t.Parallel()
	path := os.Getenv(resumeEnv)
	if path == "" {
		t.Skip("run by TestKilledCrawlResumesWithoutRefetchingWhatWasDoneOrLosingWhatWasQueued")
	}
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	c := crawltest.New(t, cfg)
	if _, err := c.Crawl(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestKilledCrawlResumesWithoutRefetchingWhatWasDoneOrLosingWhatWasQueued(t *testing.T) {
	t.Parallel()
	if os.Getenv(resumeEnv) != "" {
		t.Skip("in the child")
	}
	esURL := estest.URL(t)
	index := estest.Index(t)
	const sections, perSection = 6, 10
	site := newSite(t)
	var all, sectionPaths []string
	for s := range sections {
		var pages []string
		for p := range perSection {
			path := fmt.Sprintf("/s%d/p%d.html", s, p)
			pages = append(pages, path)
			site.handle(path, slowPage(path))
		}
		sp := fmt.Sprintf("/s%d/", s)
		site.handle(sp, slowPage(sp, pages...))
		sectionPaths = append(sectionPaths, sp)
		all = append(all, sp)
		all = append(all, pages...)
	}
	site.handle("/", slowPage("/", sectionPaths...))
	all = append(all, "/")
	cfg, _ := testConfig(t,
		fmt.Sprintf("elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}\nfetch: {concurrency: 4}", esURL, index),
		"politeness: {max_parallel_per_host: 2}", site.URL+"/")

	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledCrawlChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), resumeEnv+"="+cfg.File)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	fetched := func() int {
		n := 0
		for _, p := range all {
			if site.hit(p) > 0 {
				n++
			}
		}
		return n
	}
	// Kill it once about half the pages have been requested.
	poll := time.NewTicker(2 * time.Millisecond)
	defer poll.Stop()
wait:
	for fetched() < len(all)/2 {
		select {
		case err := <-exited:
			t.Fatalf("the child crawl ended before it could be killed (%v), after %d of %d pages", err, fetched(), len(all))
		case <-poll.C:
			continue wait
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-exited
	hitsAtKill := map[string]int{}
	for _, p := range all {
		hitsAtKill[p] = site.hit(p)
	}

	// What the killed crawl left behind.
	f, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	atKill := map[string]frontier.Record{}
	if err := frontier.ForEach(f, frontier.Query{}, func(r frontier.Record) error { atKill[r.URL] = r; return nil }); err != nil {
		t.Fatal(err)
	}
	f.Close()
	var done, queued, pending int
	for _, r := range atKill {
		switch {
		case r.State == frontier.Fetched && r.Pending == "":
			done++
		case r.State == frontier.Waiting:
			queued++
		}
		if r.Pending != "" {
			pending++
		}
	}
	if done == 0 || queued == 0 {
		t.Fatalf("killed with %d pages done and %d queued: not a crawl half done", done, queued)
	}

	c, _ := crawlKeep(t, cfg)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	var refetched []string
	for _, p := range all {
		u := site.URL + p
		r, known := atKill[u]
		switch n := site.hit(p); {
		case n == 0:
			t.Errorf("%s was never fetched", p)
		case n > 2:
			t.Errorf("%s fetched %d times", p, n)
		case n == 2:
			refetched = append(refetched, p)
			// Only a page in flight at the kill (requested, still waiting)
			// or one whose document was not yet acknowledged is fetched again.
			inFlight := hitsAtKill[p] == 1 && known && r.State == frontier.Waiting
			unacknowledged := known && r.Pending == "index"
			if !inFlight && !unacknowledged {
				t.Errorf("%s fetched again after the restart, though at the kill it was %s (pending %q, %d requests)",
					p, r.State, r.Pending, hitsAtKill[p])
			}
		}
	}
	t.Logf("killed with %d done, %d queued, %d writes pending; %d of %d pages fetched twice: %v",
		done, queued, pending, len(refetched), len(all), refetched)

	docs := searchAll(t, esURL, index)
	var ids, want []string
	for id := range docs {
		ids = append(ids, id)
	}
	for _, p := range all {
		want = append(want, docfields.ID(site.URL+p))
	}
	slices.Sort(ids)
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("the index holds %d documents, want the site's %d", len(ids), len(want))
	}
}

// slowPage serves an HTML page linking to paths after a short pause, so a
// crawl of a few dozen of them lasts long enough to be killed half-way.
func slowPage(title string, paths ...string) http.HandlerFunc {
	page := htmlPage(title, "<p>"+strings.Trim(title, "/")+"</p>"+links(paths...))
	return func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-time.After(15 * time.Millisecond):
		case <-r.Context().Done():
			return
		}
		page(w, r)
	}
}
