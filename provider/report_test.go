package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

func TestSummaryOfAFailedCycleSaysItFailedAndWhy(t *testing.T) {
	t.Parallel()
	r := provider.NewReport("file out.ndjson")
	r.Finish(errors.New("state store /var/lib/crawlspace: no space left on device"))
	var out bytes.Buffer
	r.Summary(&out)
	head, _, _ := strings.Cut(out.String(), "\n")
	if !strings.HasPrefix(head, "crawl FAILED after ") || !strings.HasSuffix(head, "into file out.ndjson: state store /var/lib/crawlspace: no space left on device") {
		t.Errorf("summary head = %q, want the failure and its cause", head)
	}
	raw, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var back struct{ Outcome, Error string }
	if err := json.Unmarshal(raw, &back); err != nil {
		t.Fatal(err)
	}
	if back.Outcome != provider.CycleFailed || !strings.Contains(back.Error, "no space left") {
		t.Errorf("report JSON outcome %q error %q", back.Outcome, back.Error)
	}
}

func TestSummaryOfAnInterruptedCrawlSaysItResumesOnTheNextStart(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	started := make(chan struct{})
	release := make(chan struct{})
	site.html("/", "home", links("/slow"))
	site.handle("/slow", func(w http.ResponseWriter, r *http.Request) {
		close(started)
		<-release
		htmlPage("slow", "")(w, r)
	})
	cfg, _ := testConfig(t, "", "", site.URL+"/")
	c := crawltest.New(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-started; cancel(); close(release) }()
	report, err := c.Crawl(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("crawl error = %v, want context.Canceled", err)
	}
	if report.Outcome != provider.CycleInterrupted || report.Error != "" {
		t.Errorf("outcome %q error %q, want interrupted without an error", report.Outcome, report.Error)
	}
	var out bytes.Buffer
	report.Summary(&out)
	if !strings.Contains(out.String(), "crawl interrupted after ") || !strings.Contains(out.String(), "resumes on the next start") {
		t.Errorf("summary = %q", out.String())
	}
}

func TestSummaryOfACompletedCrawlSaysItFinished(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", "")
	cfg, _ := testConfig(t, "", "", site.URL+"/")
	report := crawl(t, cfg)
	if report.Outcome != provider.CycleCompleted {
		t.Errorf("outcome = %q, want completed", report.Outcome)
	}
	var out bytes.Buffer
	report.Summary(&out)
	if !strings.HasPrefix(out.String(), "crawl finished in ") {
		t.Errorf("summary = %q", out.String())
	}
}

func TestStoppedCrawlAbandonsAPageThatNeverAnswersAndLeavesItQueued(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	asked := make(chan struct{})
	var once sync.Once
	site.html("/", "home", links("/hang"))
	site.handle("/hang", func(w http.ResponseWriter, r *http.Request) {
		once.Do(func() { close(asked) })
		<-r.Context().Done() // never answers; ends when the crawler hangs up
	})
	// Timeouts far beyond the guard below: only the stop can end the request.
	cfg, _ := testConfig(t, "fetch: {timeout: 2h, response_header_timeout: 1h}", "", site.URL+"/")
	c := crawltest.New(t, cfg)
	ctx, cancel := context.WithCancel(context.Background())
	go func() { <-asked; cancel() }()
	done := make(chan error, 1)
	go func() { _, err := c.Crawl(ctx); done <- err }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("crawl error = %v, want context.Canceled", err)
		}
	case <-time.After(2 * time.Minute):
		t.Fatal("the stopped crawl still waits for a page that never answers")
	}
	wantState(t, c, site.URL+"/hang", frontier.Waiting, "")
}
