package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// markdown writes the soak's verdict: the checks, then what happened (the fault phases, the
// cycles, the site's changes, each host's requests).
func (r *Result) markdown(w io.Writer, title string, lines []string) {
	fmt.Fprintf(w, "# %s\n\n", title)
	for _, l := range lines {
		fmt.Fprintf(w, "%s\n\n", l)
	}
	verdict := "**every check passed**"
	if !r.Passed() {
		verdict = "**a check FAILED**"
	}
	fmt.Fprintf(w, "Ran %s (SIGTERM at %s; the last change or fault ended at %s): %s.\n\n",
		clock(r.End.Sub(r.Start)), clock(r.End.Sub(r.Start)), clock(r.Quiet.Sub(r.Start)), verdict)
	fmt.Fprintln(w, "| check | result | figures |")
	fmt.Fprintln(w, "|---|---|---|")
	for _, c := range r.Checks {
		res := "pass"
		if !c.Pass {
			res = "**FAIL**"
		}
		fmt.Fprintf(w, "| %s | %s | %s |\n", cell(c.Name), res, cell(c.Figures))
	}

	fmt.Fprint(w, "\n## Fault phases\n\n")
	fmt.Fprintln(w, "| phase | from | to | proxy requests | faulted | items failed | `_bulk` failures | retries | happened |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, p := range r.Phases {
		yes := "yes"
		if !p.Exercised {
			yes = "**no**"
		}
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %.0f | %.0f | %s: %s |\n", cell(p.Name), clock(p.Start.Sub(r.Start)),
			clock(p.End.Sub(r.Start)), p.Requests, p.Faulted, p.Items, p.BulkFailed, p.Retries, yes, cell(p.Evidence))
	}

	fmt.Fprint(w, "\n## Cycles\n\n")
	fmt.Fprintln(w, "| began | took s | outcome | fetched | created | updated | unchanged | deleted | errors | index failures |")
	fmt.Fprintln(w, "|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|")
	for _, c := range r.Cycles {
		took := "—"
		if !c.Finished.IsZero() {
			took = fmt.Sprintf("%.1f", c.Finished.Sub(c.Started).Seconds())
		}
		outcome := c.Outcome
		if c.Error != "" {
			outcome += ": " + c.Error
		}
		t := c.Total
		fmt.Fprintf(w, "| %s | %s | %s | %d | %d | %d | %d | %d | %d | %d |\n", clock(c.Started.Sub(r.Start)), took, cell(outcome),
			t.Fetched, t.Created, t.Updated, t.Unchanged, t.Deleted, t.Errors, t.IndexFailures)
	}

	fmt.Fprint(w, "\n## Changes to the ordinary site\n\n")
	fmt.Fprintln(w, "| at | edited | added | removed |")
	fmt.Fprintln(w, "|---:|---:|---:|---:|")
	for _, c := range r.Changes {
		fmt.Fprintf(w, "| %s | %d | %d | %d |\n", clock(c.At.Sub(r.Start)), c.Edited, c.Added, c.Removed)
	}

	fmt.Fprint(w, "\n## Requests per host\n\n")
	fmt.Fprintln(w, "| host | max_parallel_per_host | delay | requests | most in flight | shortest gap | violations |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|")
	for _, h := range r.Hosts {
		gap := "—"
		if h.MinGap >= 0 {
			gap = h.MinGap.Round(10 * time.Microsecond).String()
		}
		fmt.Fprintf(w, "| %s | %d | %v | %d | %d | %s | %d |\n", h.Name, h.MaxParallel, h.Delay, h.Requests, h.MaxInFlight, gap, h.Count)
	}
}

// cell makes s safe inside a Markdown table cell.
func cell(s string) string {
	return strings.NewReplacer("|", `\|`, "\n", " ").Replace(s)
}

// writeDetails keeps what the soak measured in dir, beside the service's log and report: the
// memory samples, the fault phases and every request each host received.
func (r *Result) writeDetails(dir string) error {
	var mem strings.Builder
	mem.WriteString("seconds,vmrss_kb,rssanon_kb\n")
	for _, m := range r.Memory {
		fmt.Fprintf(&mem, "%.1f,%d,%d\n", m.At.Sub(r.Start).Seconds(), m.RSSKB, m.AnonKB)
	}
	files := map[string][]byte{"memory.csv": []byte(mem.String())}
	phases, err := json.MarshalIndent(r.Phases, "", "  ")
	if err != nil {
		return err
	}
	files["phases.json"] = phases
	for name, reqs := range r.requests {
		var b strings.Builder
		b.WriteString("start_seconds,end_seconds,status,abandoned,path\n")
		for _, q := range reqs {
			fmt.Fprintf(&b, "%.6f,%.6f,%d,%v,%s\n", q.Start.Sub(r.Start).Seconds(), q.End.Sub(r.Start).Seconds(), q.Status, q.Abandoned, q.Path)
		}
		files["requests-"+name+".csv"] = []byte(b.String())
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			return err
		}
	}
	return nil
}
