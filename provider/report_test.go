package provider_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/provider"
)

func TestSummaryOfAFailedCycleSaysItFailedAndWhy(t *testing.T) {
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
	c := crawlerFor(t, cfg)
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
