package monitor

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/provider"
)

// IsTerminal says whether f is a character device (a terminal), where a
// progress line can be redrawn in place.
func IsTerminal(f *os.File) bool {
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Progress shows a crawl's progress per source: fetched, queued, rate,
// errors and elapsed time. On a terminal it redraws one line per source in
// place a few times a second; elsewhere it logs them every LogEvery. It
// reads the report's counts and the last background count of the state
// store: it adds nothing to the crawl's own work.
type Progress struct {
	// Report returns the running cycle's report.
	Report func() *provider.Report
	// States gives the queued URLs; nil shows none.
	States *States
	// Sources are the source names, in the order to show them.
	Sources []string
	// Terminal redraws lines in place on Out; otherwise Log gets a line
	// per source every LogEvery.
	Terminal bool
	Out      io.Writer
	Log      *slog.Logger
	Redraw   time.Duration // 250ms when zero
	LogEvery time.Duration // 30s when zero

	mu    sync.Mutex
	lines int // lines drawn last, to erase them
	rates map[string]*rate
}

// rate is the pages per second over the last few seconds.
type rate struct {
	at [8]time.Time
	n  [8]int
	i  int
}

// samples is how many samples the window holds.
func (r *rate) samples() int {
	k := 0
	for _, at := range r.at {
		if !at.IsZero() {
			k++
		}
	}
	return k
}

func (r *rate) add(t time.Time, n int) float64 {
	r.i = (r.i + 1) % len(r.at)
	r.at[r.i], r.n[r.i] = t, n
	old := (r.i + 1) % len(r.at)
	if r.at[old].IsZero() {
		old = 0
		for j := range r.at {
			if !r.at[j].IsZero() && (r.at[old].IsZero() || r.at[j].Before(r.at[old])) {
				old = j
			}
		}
	}
	dt := t.Sub(r.at[old]).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(n-r.n[old]) / dt
}

// Run shows the progress until ctx ends, then erases the terminal lines.
func (p *Progress) Run(ctx context.Context) {
	every := p.LogEvery
	if every <= 0 {
		every = 30 * time.Second
	}
	if p.Terminal {
		every = p.Redraw
		if every <= 0 {
			every = 250 * time.Millisecond
		}
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			p.mu.Lock()
			p.erase()
			p.mu.Unlock()
			return
		case now := <-t.C:
			p.tick(now)
		}
	}
}

// Line is one source's progress.
type Line struct {
	Source  string
	Fetched int
	Queued  int // -1 when not counted yet
	Rate    float64
	Errors  int
	Elapsed time.Duration
}

func (l Line) String() string {
	q := "…"
	if l.Queued >= 0 {
		q = fmt.Sprint(l.Queued)
	}
	return fmt.Sprintf("%-14s fetched %7d  queued %7s  %7.1f pages/s  errors %5d  %s",
		l.Source, l.Fetched, q, l.Rate, l.Errors, clock(l.Elapsed))
}

func clock(d time.Duration) string {
	s := int(d.Seconds())
	return fmt.Sprintf("%d:%02d:%02d", s/3600, s/60%60, s%60)
}

// Lines computes each source's progress now.
func (p *Progress) Lines(now time.Time) []Line {
	r := p.Report()
	if r == nil {
		return nil
	}
	r = r.Clone()
	var snap *Snapshot
	if p.States != nil {
		snap = p.States.Get()
	}
	if p.rates == nil {
		p.rates = map[string]*rate{}
	}
	elapsed := now.Sub(r.Started)
	if !r.Finished.IsZero() {
		elapsed = r.Finished.Sub(r.Started)
	}
	out := make([]Line, 0, len(p.Sources))
	for _, name := range p.Sources {
		l := Line{Source: name, Queued: -1, Elapsed: elapsed}
		if c := r.Sources[name]; c != nil {
			l.Fetched, l.Errors = c.Fetched, c.Errors
		}
		if snap != nil {
			l.Queued = snap.Sources[name].Waiting()
		}
		rt := p.rates[name]
		if rt == nil {
			rt = &rate{}
			p.rates[name] = rt
		}
		l.Rate = rt.add(now, l.Fetched)
		if rt.samples() < 2 && elapsed > 0 {
			// One sample gives no rate over the window yet: the first line
			// shows the average since the cycle started rather than 0.
			l.Rate = float64(l.Fetched) / elapsed.Seconds()
		}
		out = append(out, l)
	}
	return out
}

func (p *Progress) tick(now time.Time) {
	p.mu.Lock()
	defer p.mu.Unlock()
	lines := p.Lines(now)
	if !p.Terminal {
		for _, l := range lines {
			attrs := []any{"source", l.Source, "fetched", l.Fetched}
			// Until the store's first count is done the queue is unknown:
			// left out rather than logged as a number it is not.
			if l.Queued >= 0 {
				attrs = append(attrs, "queued", l.Queued)
			}
			attrs = append(attrs, "pages_per_second", fmt.Sprintf("%.1f", l.Rate), "errors", l.Errors, "elapsed", clock(l.Elapsed))
			p.Log.Info("progress", attrs...)
		}
		return
	}
	var b strings.Builder
	p.eraseTo(&b)
	for _, l := range lines {
		b.WriteString("\r\x1b[2K")
		b.WriteString(l.String())
		b.WriteByte('\n')
	}
	p.lines = len(lines)
	io.WriteString(p.Out, b.String())
}

// eraseTo moves the cursor back over the lines drawn last and clears them.
func (p *Progress) eraseTo(b *strings.Builder) {
	if p.lines > 0 {
		fmt.Fprintf(b, "\x1b[%dA\r\x1b[J", p.lines)
		p.lines = 0
	}
}

func (p *Progress) erase() {
	var b strings.Builder
	p.eraseTo(&b)
	if b.Len() > 0 {
		io.WriteString(p.Out, b.String())
	}
}

// Writer wraps w (where the log goes, the same terminal) so that a log
// line first erases the progress lines: they are drawn again below it at
// the next redraw, and the two never garble each other.
func (p *Progress) Writer(w io.Writer) io.Writer {
	if !p.Terminal {
		return w
	}
	return progressWriter{p: p, w: w}
}

type progressWriter struct {
	p *Progress
	w io.Writer
}

func (pw progressWriter) Write(b []byte) (int, error) {
	pw.p.mu.Lock()
	defer pw.p.mu.Unlock()
	pw.p.erase()
	return pw.w.Write(b)
}
