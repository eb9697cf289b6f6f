package monitor

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/fakeclock"
)

func TestStatesCountURLsByStateReasonAndAgedChecksDue(t *testing.T) {
	now := time.Now()
	clk := fakeclock.New(now.Add(-2 * time.Hour))
	f, err := frontier.Open(t.TempDir(), frontier.Options{Now: clk.Now, Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 4} }})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Add(
		frontier.Item{URL: "https://a.example/old", Source: "docs"},
		frontier.Item{URL: "https://a.example/gone", Source: "docs"},
		frontier.Item{URL: "https://a.example/fresh", Source: "docs"},
		frontier.Item{URL: "https://a.example/queued", Source: "docs"},
		frontier.Item{URL: "https://b.example/x", Source: "news"},
	); err != nil {
		t.Fatal(err)
	}
	if _, err := f.Exclude("robots", frontier.Item{URL: "https://a.example/private", Source: "docs"}); err != nil {
		t.Fatal(err)
	}
	complete := func(o frontier.Outcome, wantURL string) {
		t.Helper()
		l, err := f.Next(context.Background())
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if l.Item().URL != wantURL {
			l.Release()
			t.Fatalf("leased %s, want %s", l.Item().URL, wantURL)
		}
		done := make(chan error, 1)
		if err := l.CompleteAsync(o, func(err error) { done <- err }); err != nil {
			t.Fatal(err)
		}
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	// a.example is served first (round robin starts with it), in queue order.
	complete(frontier.Outcome{State: frontier.Fetched, Status: 200}, "https://a.example/old")
	complete(frontier.Outcome{State: frontier.Fetched, Status: 200}, "https://b.example/x")
	complete(frontier.Outcome{State: frontier.Error, Reason: "http_404", Status: 404}, "https://a.example/gone")
	clk.Set(now)
	complete(frontier.Outcome{State: frontier.Fetched, Status: 200}, "https://a.example/fresh")

	cfg := &config.Config{Sources: []config.Source{{Name: "docs", MaxAge: config.Duration(time.Hour)}, {Name: "news"}}}
	snap, err := NewStates(f, cfg).Refresh()
	if err != nil {
		t.Fatal(err)
	}
	docs, news := snap.Sources["docs"], snap.Sources["news"]
	if docs == nil || news == nil {
		t.Fatalf("sources counted: %v", snap.Sources)
	}
	if docs.States[frontier.Fetched] != 2 || docs.States[frontier.Error] != 1 || docs.States[frontier.Excluded] != 1 || docs.Waiting() != 1 {
		t.Errorf("docs states = %v", docs.States)
	}
	if docs.Reasons[frontier.Error]["http_404"] != 1 || docs.Reasons[frontier.Excluded]["robots"] != 1 {
		t.Errorf("docs reasons = %v", docs.Reasons)
	}
	// /old and /gone were checked two hours ago: past the hour of max_age.
	if docs.AgedCheckDue != 2 {
		t.Errorf("docs aged checks due = %d, want 2", docs.AgedCheckDue)
	}
	if news.AgedCheckDue != 0 || news.States[frontier.Fetched] != 1 {
		t.Errorf("news = %+v (no max_age: never due)", news)
	}

	// The cycle queues them: their records still read Fetched and Error,
	// and they count as queued until each is checked.
	if n, err := f.RequeueDue("docs", now.Add(-time.Hour)); err != nil || n != 2 {
		t.Fatalf("RequeueDue = %d, %v", n, err)
	}
	if snap, err = NewStates(f, cfg).Refresh(); err != nil {
		t.Fatal(err)
	}
	if docs := snap.Sources["docs"]; docs.AgedChecksQueued != 2 || docs.Waiting() != 3 || docs.States[frontier.Fetched] != 2 {
		t.Errorf("docs after RequeueDue: %d aged checks queued, %d waiting, states %v; want 2, 3 (with /queued)",
			docs.AgedChecksQueued, docs.Waiting(), docs.States)
	}
	complete(frontier.Outcome{State: frontier.Fetched, Status: 200}, "https://a.example/queued")
	complete(frontier.Outcome{State: frontier.Fetched, Status: 304}, "https://a.example/old")
	if snap, err = NewStates(f, cfg).Refresh(); err != nil {
		t.Fatal(err)
	}
	if docs := snap.Sources["docs"]; docs.AgedChecksQueued != 1 || docs.Waiting() != 1 {
		t.Errorf("docs after one check: %d aged checks queued, %d waiting; want 1 (/gone), 1", docs.AgedChecksQueued, docs.Waiting())
	}
}

func TestStatesRecountOnlyWhenStale(t *testing.T) {
	f, err := frontier.Open(t.TempDir(), frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	clk := fakeclock.New(time.Unix(1000, 0))
	s := NewStates(f, &config.Config{})
	s.Now = clk.Now
	old := &Snapshot{At: clk.Now(), Took: time.Second, Sources: map[string]*SourceState{}}
	s.snap = old
	// settled waits for a background count to end and says whether one replaced old.
	settled := func() bool {
		for {
			s.mu.Lock()
			running, snap := s.running, s.snap
			s.mu.Unlock()
			if !running {
				return snap != old
			}
			runtime.Gosched() // a walk of a small store: over in a moment
		}
	}
	clk.Set(clk.Now().Add(19 * time.Second))
	s.Get()
	if settled() {
		t.Error("a count ran 19s after one that took 1s: counts must be 20 times their duration apart")
	}
	clk.Set(clk.Now().Add(time.Second))
	s.Get()
	if !settled() {
		t.Error("no count ran once the last one was stale")
	}
}
