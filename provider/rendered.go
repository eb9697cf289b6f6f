package provider

import (
	"fmt"
	"strings"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider/fetch"
)

// renderNotes records what happened while a page was rendered, as
// pageWarnings does for reading it: each note a reason in the report and
// the log, and all of them in the page's history.
func (c *Crawler) renderNotes(source, url string, r *fetch.Rendered) string {
	if r == nil {
		return ""
	}
	var notes []string
	note := func(reason, detail string, warn bool) {
		c.reportNow().Reason(source, url, reason, detail)
		log := c.log.Info
		if warn {
			log = c.log.Warn
		}
		log("page rendered with a note", "url", url, "source", source, "reason", reason, "detail", detail)
		notes = append(notes, reason+": "+detail)
	}
	if r.Retried != "" {
		note("render_retried", "the browser was restarted and the page rendered again after: "+r.Retried, true)
	}
	if !r.WaitMet {
		note("render_timeout", fmt.Sprintf("wait %s not met within %s (%s): the DOM was taken as it was", r.Wait, r.Took.Round(100_000_000), r.Rule), false)
	}
	if r.ScriptErrors > 0 {
		note("script_error", fmt.Sprintf("%d uncaught, the first: %s", r.ScriptErrors, r.FirstScriptError), false)
	}
	if r.Dialogs > 0 {
		note("render_dialog", fmt.Sprintf("%d dismissed, the first: %s", r.Dialogs, r.FirstDialog), false)
	}
	if r.Failed > 0 {
		note("render_request_failed", fmt.Sprintf("%d of the page's %d requests failed, the first: %s", r.Failed, r.Requests, r.FirstFailure), false)
	}
	return strings.Join(notes, "; ")
}

// renderFailed records a page the browser could not render. The page was
// fetched, so the site is fine: the URL waits its backoff as a temporary
// error would, and past max_temporary_errors in a row it is in error, but
// its document is never deleted for a failure of the crawler's own.
func (j *job) renderFailed(e end) {
	c, name, rec := j.c, j.src.cfg.Name, j.rec
	attempts := rec.TempErrCount + 1
	c.log.Warn("page not rendered: it waits, its document kept", "url", j.item.URL, "source", name,
		"reason", e.reason, "err", e.detail, "attempts", attempts)
	if attempts >= j.src.cfg.MaxTemporaryErrors {
		c.reportNow().Failure(name, j.item.URL, e.reason, e.detail)
		c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Error, Reason: e.reason, Detail: e.detail}})
		return
	}
	c.reportNow().Reason(name, j.item.URL, e.reason, e.detail)
	c.complete(completion{lease: j.lease, outcome: frontier.Outcome{State: frontier.Waiting, Reason: e.reason, Detail: e.detail,
		Backoff: c.now().Add(c.timing.backoff(rec.TempErrCount))}})
}
