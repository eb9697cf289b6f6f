package monitor

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/provider"
)

func progressReport(t0 time.Time, fetched int) *provider.Report {
	return &provider.Report{Started: t0, Sources: map[string]*provider.Counts{
		"docs": {Fetched: fetched, Errors: 2},
		"news": {Fetched: 3},
	}}
}

func TestProgressOnATerminalRedrawsOneLinePerSourceInPlace(t *testing.T) {
	var out bytes.Buffer
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	fetched := 10
	p := &Progress{Terminal: true, Out: &out, Sources: []string{"docs", "news"},
		Report: func() *provider.Report { return progressReport(t0, fetched) }}
	p.tick(t0.Add(time.Second))
	first := out.String()
	if strings.Count(first, "\n") != 2 || strings.Contains(first, "\x1b[2A") {
		t.Fatalf("first draw = %q, want two fresh lines", first)
	}
	if !strings.Contains(first, "docs") || !strings.Contains(first, "fetched      10") || !strings.Contains(first, "errors     2") ||
		!strings.Contains(first, "queued       …") || !strings.Contains(first, "0:00:01") {
		t.Errorf("first draw = %q", first)
	}
	out.Reset()
	fetched = 30
	p.tick(t0.Add(2 * time.Second))
	second := out.String()
	if !strings.HasPrefix(second, "\x1b[2A\r\x1b[J") {
		t.Errorf("second draw = %q, want it to start by moving up over the two lines", second)
	}
	if !strings.Contains(second, "fetched      30") || !strings.Contains(second, "20.0 pages/s") {
		t.Errorf("second draw = %q, want 30 fetched at 20 pages/s", second)
	}

	// A log line erases the block first; the next tick draws it below the line.
	out.Reset()
	log := slog.New(slog.NewTextHandler(p.Writer(&out), nil))
	log.Info("fetch failed", "url", "http://x/")
	if s := out.String(); !strings.HasPrefix(s, "\x1b[2A\r\x1b[J") || !strings.Contains(s, `msg="fetch failed"`) {
		t.Errorf("log line written as %q", s)
	}
	out.Reset()
	p.tick(t0.Add(3 * time.Second))
	if s := out.String(); strings.Contains(s, "\x1b[2A") || strings.Count(s, "\n") != 2 {
		t.Errorf("draw after a log line = %q, want two fresh lines", s)
	}

	// Stopping erases the lines, so the summary starts on a clean screen.
	out.Reset()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	p.Run(ctx)
	if s := out.String(); s != "\x1b[2A\r\x1b[J" {
		t.Errorf("stop wrote %q, want the erase sequence", s)
	}
}

func TestProgressOffATerminalLogsAPlainLinePerSource(t *testing.T) {
	var logs bytes.Buffer
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &Progress{Out: &bytes.Buffer{}, Sources: []string{"docs", "news"},
		Log:    slog.New(slog.NewJSONHandler(&logs, nil)),
		Report: func() *provider.Report { return progressReport(t0, 10) }}
	p.tick(t0.Add(90 * time.Second))
	lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("logged %q, want one line per source", logs.String())
	}
	var rec map[string]any
	if err := json.Unmarshal([]byte(lines[0]), &rec); err != nil {
		t.Fatal(err)
	}
	if rec["msg"] != "progress" || rec["source"] != "docs" || rec["fetched"] != 10.0 || rec["errors"] != 2.0 || rec["elapsed"] != "0:01:30" {
		t.Errorf("progress line = %v", rec)
	}
	if p.Writer(&logs) != &logs {
		t.Error("off a terminal the log must be written as is")
	}
}

func TestRateIsPagesPerSecondOverTheLastSamples(t *testing.T) {
	var r rate
	t0 := time.Unix(1000, 0)
	if got := r.add(t0, 0); got != 0 {
		t.Errorf("first sample rate = %v", got)
	}
	for i := 1; i <= 20; i++ {
		got := r.add(t0.Add(time.Duration(i)*time.Second), i*5)
		if got != 5 {
			t.Fatalf("sample %d: rate %v, want 5", i, got)
		}
	}
	// A stall shows within the window.
	got := 0.0
	for i := 21; i <= 24; i++ {
		got = r.add(t0.Add(time.Duration(i)*time.Second), 100)
	}
	if got >= 5 || got <= 0 {
		t.Errorf("rate after a stall = %v, want between 0 and 5", got)
	}
}

func TestProgressOffATerminalFirstLineLeavesOutAnUncountedQueueAndGivesTheAverageRate(t *testing.T) {
	var logs bytes.Buffer
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	p := &Progress{Out: &bytes.Buffer{}, Sources: []string{"docs"},
		Log:    slog.New(slog.NewJSONHandler(&logs, nil)),
		Report: func() *provider.Report { return progressReport(t0, 300) }}
	p.tick(t0.Add(30 * time.Second))
	var rec map[string]any
	if err := json.Unmarshal(logs.Bytes(), &rec); err != nil {
		t.Fatalf("%v: %s", err, logs.String())
	}
	if _, ok := rec["queued"]; ok {
		t.Errorf("queued logged as %v before the store was counted", rec["queued"])
	}
	if rec["pages_per_second"] != "10.0" {
		t.Errorf("first line pages_per_second = %v, want 10.0 (300 pages in 30 s)", rec["pages_per_second"])
	}
}
