package provider

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/provider/fetch"
)

// Observer sees every count as the Report records it, so metrics and the
// report cannot disagree, and the sink's requests and retries. Its methods
// are called from the crawl's workers and the sink's callbacks: they must
// be cheap and safe for concurrent use. A crawl without an observer pays a
// nil check per count.
type Observer interface {
	// Fetched: a response with status arrived for a URL of source, with a
	// body of bytes (0 when it was not downloaded), after took.
	Fetched(source string, status int, bytes int, took time.Duration)
	// Document: a document outcome, one of the Doc* constants.
	Document(source, outcome string)
	// Reason: n URLs of source skipped, excluded or failed for reason;
	// isError when they count as errors.
	Reason(source, reason string, n int, isError bool)
	// IndexRetry: a write of a document of source is sent again after a backoff.
	IndexRetry(source string)
	// Bulk: one request to the Elasticsearch _bulk API answered with
	// status, or failed with err, after took.
	Bulk(took time.Duration, status int, err error)
	// Orphans: the orphans of source found as a cycle ended, and how many
	// of them its orphans policy left in the index; called only for a
	// source whose orphans that cycle decided.
	Orphans(source string, found, kept int)
	// DeletesHeld: the deletes of source its hold_deletes holds, as a
	// cycle starts and ends and after a confirmation; 0 when none.
	DeletesHeld(source string, n int)
}

// Document outcomes as the report counts them.
const (
	DocCreated   = "created"
	DocUpdated   = "updated"
	DocUnchanged = "unchanged"
	DocDeleted   = "deleted"
	DocWritten   = "written"
	DocFailed    = "failed"
)

// SetObserver makes o see every count from now on; call it before Crawl.
func (c *Crawler) SetObserver(o Observer) { c.cycles.observe(o) }

// sinkObserver passes the sink's traffic on to the observer, with each
// retried write's source, and logs its outages: one warning when writes
// stop landing, one line when they land again.
type sinkObserver struct{ c *Crawler }

func (s sinkObserver) Unavailable(err error) {
	s.c.log.Warn("elasticsearch unavailable: index writes are retried until they land", "err", err)
}

func (s sinkObserver) Available(down time.Duration, retried int) {
	s.c.log.Info("elasticsearch available again", "down_for", down.Round(time.Millisecond).String(), "writes_retried", retried)
}

// IndexUnavailableSince is when the index stopped taking the crawl's
// writes, as the sink last found: zero while they land. Between writes
// nothing is asked of the index, so an outage shows with the first write
// it delays.
func (c *Crawler) IndexUnavailableSince() time.Time {
	if d, ok := c.sink.(interface{ DownSince() time.Time }); ok {
		return d.DownSince()
	}
	return time.Time{}
}

func (s sinkObserver) EmbeddingUnavailable(err error) {
	s.c.log.Warn("embedding service unavailable: documents wait for their vectors", "err", err)
}

func (s sinkObserver) EmbeddingAvailable(down time.Duration, retried int) {
	s.c.log.Info("embedding service available again", "down_for", down.Round(time.Millisecond).String(), "writes_retried", retried)
}

func (s sinkObserver) Bulk(took time.Duration, status int, err error) {
	if o, _ := s.c.cycles.observed(); o != nil {
		o.Bulk(took, status, err)
	}
}

func (s sinkObserver) Retry(url string) {
	if o, r := s.c.cycles.observed(); o != nil {
		o.IndexRetry(r.sourceOf(url))
	}
}

// Current is the report of the cycle running, or of the last one.
func (c *Crawler) Current() *Report { return c.reportNow() }

// NextDiscovery is when the named source's start URLs, sitemaps and feeds
// are next due (zero when they never were visited: at once).
func (c *Crawler) NextDiscovery(source string) (time.Time, error) {
	src := c.sources[source]
	if src == nil {
		return time.Time{}, nil
	}
	return NextDiscovery(c.front, src.cfg)
}

// NextDiscovery reads from a state store when src's start URLs, sitemaps
// and feeds are next due: zero when they never were visited (at once).
func NextDiscovery(front frontier.Meta, src *config.Source) (time.Time, error) {
	raw, err := front.GetMeta(metaDiscovered + src.Name)
	if err != nil || raw == nil {
		return time.Time{}, err
	}
	var last time.Time
	if err := last.UnmarshalText(raw); err != nil {
		return time.Time{}, nil
	}
	return last.Add(src.DiscoveryInterval.D()), nil
}

// fetchedPage counts a response in the report and notes the request on the
// lease for the URL's history.
func (c *Crawler) fetchedPage(lease frontier.Lease, source string, res *fetch.Response, took time.Duration) {
	c.reportNow().fetched(source, res.Status, len(res.Body), took)
	lease.Fetched(int64(len(res.Body)), took)
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("fetched", "url", res.URL, "source", source, "status", res.Status,
			"bytes", len(res.Body), "took", took.Round(time.Microsecond))
	}
}

// decided counts a page fetched but not indexed under its own URL (a
// redirect, a canonical alias, noindex, a rule) and logs the decision.
func (c *Crawler) decided(source, url, reason, detail string, status int) {
	c.reportNow().Reason(source, url, reason, detail)
	if c.log.Enabled(context.Background(), slog.LevelDebug) {
		c.log.Debug("not indexed", "url", url, "source", source, "reason", reason, "status", status, "detail", detail)
	}
}

// pageWarnings records what a fetched page lost or was read as against its
// word: links past max_links_per_page (when its links are followed), a
// charset its bytes contradict, a Content-Type its bytes contradict
// (mismatch says how), a document file without text (a scanned PDF,
// indexed with its metadata). Each is a reason in the report with the page
// as example and a log line; the returned text is for the page's history
// event ("" when there is nothing to say).
func (c *Crawler) pageWarnings(source, url string, out *mapping.Result, followed bool, mismatch string) string {
	var notes []string
	if mismatch != "" {
		c.reportNow().Reason(source, url, "content_type_mismatch", mismatch)
		c.log.Info("Content-Type contradicted by the body", "url", url, "source", source, "reason", "content_type_mismatch", "detail", mismatch)
		notes = append(notes, "content_type_mismatch: "+mismatch)
	}
	if out.Doc.Body == "" && !docfields.IsPage(out.Doc.ContentType) {
		const detail = "the file holds no text: indexed with its metadata"
		c.reportNow().Reason(source, url, "no_text", detail)
		c.log.Info("document without text", "url", url, "source", source, "reason", "no_text")
		notes = append(notes, "no_text: "+detail)
	}
	if out.LinksCapped && followed {
		detail := fmt.Sprintf("kept %d distinct links of %d found (fetch.max_links_per_page)", len(out.Links), out.LinksFound)
		c.reportNow().Reason(source, url, "links_capped", detail)
		c.log.Info("page links capped", "url", url, "source", source, "reason", "links_capped", "detail", detail)
		notes = append(notes, "links_capped: "+detail)
	}
	for _, fw := range out.FieldWarnings {
		// A value an extraction rule or structured data mapping found that
		// its field's type refused: the page is indexed without it.
		c.reportNow().Reason(source, url, "field_unparsed", fw)
		c.log.Info("field value refused by its type", "url", url, "source", source, "reason", "field_unparsed", "detail", fw)
		notes = append(notes, "field_unparsed: "+fw)
	}
	if out.CharsetWarning != "" {
		c.reportNow().Reason(source, url, "charset_mismatch", out.CharsetWarning)
		c.log.Warn("declared charset contradicted by the page", "url", url, "source", source, "reason", "charset_mismatch", "detail", out.CharsetWarning)
		notes = append(notes, "charset_mismatch: "+out.CharsetWarning)
	}
	return strings.Join(notes, "; ")
}
