package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/sink"
)

// Counts are what one source (or the whole crawl) did.
type Counts struct {
	Fetched   int `json:"fetched"`
	Created   int `json:"created"`
	Updated   int `json:"updated"`
	Unchanged int `json:"unchanged"`
	Deleted   int `json:"deleted"`
	// Written counts documents sent to the file sink, which cannot tell creates from updates.
	Written int `json:"written"`
	// Errors counts URLs that could not be fetched or indexed.
	Errors int `json:"errors"`
	// IndexFailures counts documents Elasticsearch rejected for good (also in Errors).
	IndexFailures int `json:"index_failures"`
	// Reasons counts URLs that were skipped, excluded or failed, by reason code.
	Reasons map[string]int `json:"reasons"`
	// Orphans counts indexed pages no link reaches any more from the start
	// URLs, sitemaps or feeds, found as a cycle that visited them ended;
	// OrphansKept those still in the index after the source's orphans
	// policy. The others are in Deleted, under reason "orphan" (policy
	// delete) or the status a recheck got.
	Orphans     int `json:"orphans"`
	OrphansKept int `json:"orphans_kept"`
	// DeletesHeld counts the deletes the source's hold_deletes held as the
	// cycle ended: more than its share of the source's documents. Their
	// documents stay in the index (see the warnings).
	DeletesHeld int `json:"deletes_held"`
	// Passages counts the passages of the documents written to an index
	// with embeddings: embedded, reused, failed, and what was sent.
	Passages sink.PassageCounts `json:"passages,omitzero"`
}

// Example is one URL behind a reason, so an administrator can look at it.
type Example struct {
	URL    string `json:"url"`
	Source string `json:"source"`
	Reason string `json:"reason"`
	Detail string `json:"detail,omitempty"`
}

// Report is the account of one crawl cycle, written by -report and printed
// at the end of a crawl; both come from the same counts.
type Report struct {
	Started  time.Time          `json:"started"`
	Finished time.Time          `json:"finished"`
	Seconds  float64            `json:"duration_seconds"`
	Sink     string             `json:"sink"`
	Total    Counts             `json:"total"`
	Sources  map[string]*Counts `json:"sources"`
	// Examples holds up to a few URLs per reason.
	Examples []Example `json:"examples"`
	Warnings []string  `json:"warnings,omitempty"`
	// CrawlDelays are the hosts whose robots.txt asked for a Crawl-delay
	// in the cycle, by host: what was asked and the pause kept.
	CrawlDelays []CrawlDelay `json:"crawl_delays,omitempty"`
	// Outcome is how the cycle ended: completed, interrupted (a signal;
	// it resumes on the next start) or failed, with Error saying why.
	Outcome string `json:"outcome"`
	Error   string `json:"error,omitempty"`

	mu      sync.Mutex
	perCode map[string]int // examples kept per reason
	// docs are the sources of the document URLs on their way to the sink.
	docs docSources
	// obs sees every count as it is made; set before the report is used.
	obs Observer
	// over holds the pairs of source and budget key met in the cycle.
	over map[string]bool
	// now is the clock of Started and Finished.
	now func() time.Time
}

const examplesPerReason = 5

// NewReport starts an empty report of a cycle writing to sinkName.
func NewReport(sinkName string) *Report { return newReport(sinkName, time.Now) }

// newReport is NewReport on the clock now.
func newReport(sinkName string, now func() time.Time) *Report {
	return &Report{Started: now().UTC(), Sink: sinkName, now: now,
		Sources: map[string]*Counts{}, perCode: map[string]int{}, Total: Counts{Reasons: map[string]int{}}}
}

func (r *Report) source(name string) *Counts {
	c, ok := r.Sources[name]
	if !ok {
		c = &Counts{Reasons: map[string]int{}}
		r.Sources[name] = c
	}
	return c
}

func (r *Report) add(src string, f func(*Counts)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	f(r.source(src))
	f(&r.Total)
}

// Reason records a URL skipped, excluded or refused for reason (a code
// from the documented set).
func (r *Report) Reason(src, url, reason, detail string) {
	r.reasons(src, url, reason, detail, 1, 0)
}

// Failure records a URL that failed for reason: it counts as an error too.
func (r *Report) Failure(src, url, reason, detail string) {
	r.reasons(src, url, reason, detail, 1, 1)
}

// ReasonN records n URLs refused for one reason, with one of them as the example.
func (r *Report) ReasonN(src, url, reason, detail string, n int) {
	r.reasons(src, url, reason, detail, n, 0)
}

// reasons counts n URLs under reason, errs of them as errors too, and
// keeps url as an example while the reason has few.
func (r *Report) reasons(src, url, reason, detail string, n, errs int) {
	if r.obs != nil {
		r.obs.Reason(src, reason, n, errs > 0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range []*Counts{r.source(src), &r.Total} {
		c.Reasons[reason] += n
		c.Errors += errs
	}
	if r.perCode[reason] < examplesPerReason {
		r.perCode[reason]++
		r.Examples = append(r.Examples, Example{URL: url, Source: src, Reason: reason, Detail: detail})
	}
}

// firstOver says whether this is the cycle's first report of source
// meeting the budget limit.
func (r *Report) firstOver(source, limit string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	k := source + "\x00" + limit
	if r.over[k] {
		return false
	}
	if r.over == nil {
		r.over = map[string]bool{}
	}
	r.over[k] = true
	return true
}

// crawlDelay records what a host's Crawl-delay made of its politeness,
// replacing what the cycle recorded for the host before.
func (r *Report) crawlDelay(d CrawlDelay) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, found := slices.BinarySearchFunc(r.CrawlDelays, d.Host, func(x CrawlDelay, host string) int { return strings.Compare(x.Host, host) })
	if found {
		r.CrawlDelays[i] = d
		return
	}
	r.CrawlDelays = slices.Insert(r.CrawlDelays, i, d)
}

func (r *Report) Warn(msg string) {
	r.mu.Lock()
	r.Warnings = append(r.Warnings, msg)
	r.mu.Unlock()
}

func (r *Report) fetched(src string, status, bytes int, took time.Duration) {
	r.add(src, func(c *Counts) { c.Fetched++ })
	if r.obs != nil {
		r.obs.Fetched(src, status, bytes, took)
	}
}

// orphans counts a source's orphans and those left in the index; the
// observer hears of a source that has none too.
func (r *Report) orphans(src string, found, kept int) {
	if found > 0 {
		r.add(src, func(c *Counts) { c.Orphans += found; c.OrphansKept += kept })
	}
	if r.obs != nil {
		r.obs.Orphans(src, found, kept)
	}
}

// deletesHeld counts the deletes a source's guard holds as the cycle ends;
// the observer hears of a source that holds none too.
func (r *Report) deletesHeld(src string, n int) {
	if n > 0 {
		r.add(src, func(c *Counts) { c.DeletesHeld += n })
	}
	if r.obs != nil {
		r.obs.DeletesHeld(src, n)
	}
}

// unchanged counts a document that needed no write.
func (r *Report) unchanged(src string) {
	r.add(src, func(c *Counts) { c.Unchanged++ })
	if r.obs != nil {
		r.obs.Document(src, DocUnchanged)
	}
}

// sourceOf is the source a document URL on its way to the sink belongs
// to, "" when none was expected.
func (r *Report) sourceOf(url string) string { return r.docs.source(url) }

// expect notes which source a document URL belongs to, so the sink's
// acknowledgement is counted against it.
func (r *Report) expect(url, src string) { r.docs.expect(url, src) }

// docSources maps the document URLs on their way to the sink to their
// source, under a lock of its own: workers add to it while the sink's
// acknowledgements take from it, apart from the report's counts.
type docSources struct {
	mu sync.Mutex
	of map[string]string
}

func (d *docSources) expect(url, src string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.of == nil {
		d.of = map[string]string{}
	}
	d.of[url] = src
}

func (d *docSources) source(url string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.of[url]
}

// take is the source of an acknowledged document URL, forgotten as it is
// taken.
func (d *docSources) take(url string) string {
	d.mu.Lock()
	defer d.mu.Unlock()
	src := d.of[url]
	delete(d.of, url)
	return src
}

// sinkResult counts an acknowledgement and returns the source it counted it against.
func (r *Report) sinkResult(res sink.Result) string {
	src := r.docs.take(res.URL)
	doc := ""
	switch res.Outcome {
	case sink.Created:
		r.add(src, func(c *Counts) { c.Created++ })
		doc = DocCreated
	case sink.Updated:
		r.add(src, func(c *Counts) { c.Updated++ })
		doc = DocUpdated
	case sink.Deleted, sink.NotFound:
		r.add(src, func(c *Counts) { c.Deleted++ })
		doc = DocDeleted
	case sink.Written:
		r.add(src, func(c *Counts) { c.Written++ })
		doc = DocWritten
	case sink.Failed:
		r.add(src, func(c *Counts) { c.IndexFailures++ })
		doc = DocFailed
	}
	if doc != "" && r.obs != nil {
		r.obs.Document(src, doc)
	}
	if res.Passages != (sink.PassageCounts{}) {
		r.add(src, func(c *Counts) { c.Passages.Add(res.Passages) })
	}
	switch {
	case res.Outcome == sink.Failed:
		r.Failure(src, res.URL, reasonIndexFailed, res.Reason)
	case res.NoVectors:
		r.Failure(src, res.URL, reasonEmbeddingFailed, res.Reason)
	}
	return src
}

// Clone copies the report as it stands, for a status page or a progress
// line while the cycle runs.
func (r *Report) Clone() *Report {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := &Report{Started: r.Started, Finished: r.Finished, Seconds: r.Seconds, Sink: r.Sink, Outcome: r.Outcome, Error: r.Error,
		Total: r.Total.clone(), Sources: make(map[string]*Counts, len(r.Sources)),
		Examples: slices.Clone(r.Examples), Warnings: slices.Clone(r.Warnings), CrawlDelays: slices.Clone(r.CrawlDelays)}
	for n, c := range r.Sources {
		cc := c.clone()
		out.Sources[n] = &cc
	}
	return out
}

func (c *Counts) clone() Counts {
	out := *c
	out.Reasons = maps.Clone(c.Reasons)
	return out
}

// How a cycle ended (Report.Outcome).
const (
	CycleCompleted   = "completed"
	CycleInterrupted = "interrupted"
	CycleFailed      = "failed"
)

// Finish stamps the end time and how the cycle ended: err is the cycle's
// error, context.Canceled for one stopped by a signal.
func (r *Report) Finish(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case err == nil:
		r.Outcome = CycleCompleted
	case errors.Is(err, context.Canceled):
		r.Outcome = CycleInterrupted
	default:
		r.Outcome, r.Error = CycleFailed, err.Error()
	}
	r.Finished = r.now().UTC()
	r.Seconds = r.Finished.Sub(r.Started).Seconds()
	sort.SliceStable(r.Examples, func(i, j int) bool { return r.Examples[i].Reason < r.Examples[j].Reason })
}

// WriteFile writes the report as indented JSON.
func (r *Report) WriteFile(path string) error {
	r.mu.Lock()
	raw, err := json.MarshalIndent(r, "", "  ")
	r.mu.Unlock()
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(raw, '\n'), 0o644)
}

// Summary prints the human-readable end-of-crawl summary from the same counts as the JSON.
func (r *Report) Summary(w io.Writer) {
	r.mu.Lock()
	defer r.mu.Unlock()
	line := func(name string, c *Counts) {
		fmt.Fprintf(w, "  %-12s fetched %d, created %d, updated %d, unchanged %d, deleted %d, written %d, errors %d\n",
			name, c.Fetched, c.Created, c.Updated, c.Unchanged, c.Deleted, c.Written, c.Errors)
		if c.Orphans > 0 {
			fmt.Fprintf(w, "  %-12s orphans %d, kept %d\n", "", c.Orphans, c.OrphansKept)
		}
		if c.DeletesHeld > 0 {
			fmt.Fprintf(w, "  %-12s deletes held %d (their documents stay in the index)\n", "", c.DeletesHeld)
		}
		if p := c.Passages; p != (sink.PassageCounts{}) {
			fmt.Fprintf(w, "  %-12s passages embedded %d, reused %d, failed %d, dropped %d; %d requests, %d characters, %d tokens sent\n",
				"", p.Embedded, p.Reused, p.Failed, p.Dropped, p.Requests, p.Characters, p.Tokens)
		}
		codes := make([]string, 0, len(c.Reasons))
		for k := range c.Reasons {
			codes = append(codes, k)
		}
		sort.Strings(codes)
		for _, k := range codes {
			fmt.Fprintf(w, "  %-12s   %-22s %d\n", "", k, c.Reasons[k])
		}
	}
	switch r.Outcome {
	case CycleFailed:
		fmt.Fprintf(w, "crawl FAILED after %.1fs into %s: %s\n", r.Seconds, r.Sink, r.Error)
	case CycleInterrupted:
		fmt.Fprintf(w, "crawl interrupted after %.1fs into %s (it resumes on the next start)\n", r.Seconds, r.Sink)
	default:
		fmt.Fprintf(w, "crawl finished in %.1fs into %s\n", r.Seconds, r.Sink)
	}
	names := make([]string, 0, len(r.Sources))
	for n := range r.Sources {
		if n != "" {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for _, n := range names {
		line(n, r.Sources[n])
	}
	line("total", &r.Total)
	for _, d := range r.CrawlDelays {
		fmt.Fprintf(w, "  crawl-delay: %s keeps %s\n", d.Host, d)
	}
	for _, wmsg := range r.Warnings {
		fmt.Fprintf(w, "  warning: %s\n", wmsg)
	}
}
