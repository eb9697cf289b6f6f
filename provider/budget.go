package provider

import (
	"fmt"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
)

// Budgets (issue 12): each source's budget keys become the frontier's
// limits, which count what the store holds and what a cycle fetches.
// Whatever a limit holds back is a reason in the cycle's report, counted
// with an example; the first time in a cycle that a source meets a limit is
// also a warning of the report and one line of the log.

// budgetsOf maps each source of cfg to its limits, as the frontier takes them.
func budgetsOf(cfg *config.Config) map[string]frontier.Budget {
	out := make(map[string]frontier.Budget, len(cfg.Sources))
	for i := range cfg.Sources {
		b := cfg.Sources[i].Budget
		out[cfg.Sources[i].Name] = frontier.Budget{URLs: b.MaxURLs, URLsPerHost: b.MaxURLsPerHost,
			Hosts: b.MaxHosts, Pages: b.MaxPagesPerCycle, PagesPerHost: b.MaxPagesPerHostPerCycle}
	}
	return out
}

// overBudget counts what a limit held back in the current cycle's report.
func (c *Crawler) overBudget(n frontier.OverBudget) {
	report := c.reportNow()
	reason := n.Limit.String()
	report.ReasonN(n.Source, n.Example, reason, budgetDetail(n), n.URLs)
	if !report.firstOver(n.Source, reason) {
		return
	}
	report.Warn(budgetWarning(n))
	c.log.Warn("budget reached", "source", n.Source, "reason", reason, "limit", n.Max, "host", n.Host, "url", n.Example)
}

// budgetDetail is a report example's detail: the limit and where it applies.
func budgetDetail(n frontier.OverBudget) string {
	d := fmt.Sprintf("%s %d", n.Limit, n.Max)
	if n.Host != "" {
		d += " on " + n.Host
	}
	return d
}

// budgetWarning says what a limit does to the source from now on.
func budgetWarning(n frontier.OverBudget) string {
	what := budgetDetail(n)
	switch n.Limit {
	case frontier.LimitPages, frontier.LimitPagesPerHost:
		return fmt.Sprintf("source %s reached its budget %s: the URLs still queued wait for the next cycle (reason %s)", n.Source, what, n.Limit)
	default:
		return fmt.Sprintf("source %s reached its budget %s: URLs found beyond it are counted under reason %s, not stored", n.Source, what, n.Limit)
	}
}
