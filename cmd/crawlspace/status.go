package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/rules"
)

func init() {
	register("status", "show what the state store holds: URLs by state and reason, per source", runStatus)
}

// sourceStatus is one source's line of `status -json`.
type sourceStatus struct {
	Source  string                    `json:"source"`
	Total   int                       `json:"total"`
	States  map[string]int            `json:"states"`
	Reasons map[string]map[string]int `json:"reasons"` // state -> reason -> URLs
	// DueForAgedCheck counts fetched URLs older than max_age: the next crawl revisits them.
	DueForAgedCheck int `json:"due_for_aged_check"`
}

// urlStatus is `status -url U`.
type urlStatus struct {
	URL          string    `json:"url"`
	Source       string    `json:"source"`
	State        string    `json:"state"`
	Reason       string    `json:"reason,omitempty"`
	Status       int       `json:"status,omitempty"`
	Depth        int       `json:"depth"`
	Class        string    `json:"queue"`
	ErrCount     int       `json:"errors_in_a_row,omitempty"`
	TempErrCount int       `json:"temporary_errors_in_a_row,omitempty"`
	FetchedAt    time.Time `json:"fetched_at,omitzero"`
	CheckedAt    time.Time `json:"checked_at,omitzero"`
	ETag         string    `json:"etag,omitempty"`
	LastModified string    `json:"last_modified,omitempty"`
	Hash         string    `json:"content_hash,omitempty"`
	Indexed      bool      `json:"indexed"`
	DocID        string    `json:"doc_id,omitempty"`
	Pending      string    `json:"pending_write,omitempty"`
	Target       string    `json:"target,omitempty"`
	Lastmod      time.Time `json:"sitemap_lastmod,omitzero"`
	// Decision is what the current configuration decides for the URL.
	Decision *explanation `json:"decision,omitempty"`
}

func runStatus(args []string) int {
	fs := newFlags("status")
	path := fs.String("config", "", "configuration file")
	asJSON := fs.Bool("json", false, "print JSON")
	one := fs.String("url", "", "show one URL's stored state and the current decision for it")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: state store %s: %v (a running crawl holds it)\n", cfg.StateDir, err)
		return exitFailed
	}
	defer front.Close()
	if *one != "" {
		return statusOfURL(os.Stdout, cfg, set, front, *one, *asJSON)
	}
	list, err := sourceStatuses(cfg, front)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	if *asJSON {
		enc := json.NewEncoder(os.Stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(list); err != nil {
			return exitFailed
		}
		return exitOK
	}
	printStatuses(os.Stdout, list)
	return exitOK
}

func sourceStatuses(cfg *config.Config, front *frontier.Frontier) ([]sourceStatus, error) {
	counts, err := front.Counts()
	if err != nil {
		return nil, err
	}
	now := time.Now()
	var out []sourceStatus
	for i := range cfg.Sources {
		sc := &cfg.Sources[i]
		st := sourceStatus{Source: sc.Name, States: map[string]int{}, Reasons: map[string]map[string]int{}}
		if c := counts[sc.Name]; c != nil {
			st.Total = c.Total()
			for s, n := range c.States {
				if n > 0 {
					st.States[frontier.State(s).String()] = n
				}
			}
			for s, m := range c.Reasons {
				st.Reasons[s.String()] = m
			}
		}
		if sc.MaxAge > 0 {
			cut := now.Add(-sc.MaxAge.D())
			if err := front.ForEach(sc.Name, func(r frontier.Record) error {
				if r.State == frontier.Fetched && r.CheckedAt.Before(cut) {
					st.DueForAgedCheck++
				}
				return nil
			}); err != nil {
				return nil, err
			}
		}
		out = append(out, st)
	}
	return out, nil
}

func printStatuses(w io.Writer, list []sourceStatus) {
	for _, st := range list {
		fmt.Fprintf(w, "%s: %d URL(s)\n", st.Source, st.Total)
		states := make([]string, 0, len(st.States))
		for s := range st.States {
			states = append(states, s)
		}
		sort.Strings(states)
		for _, s := range states {
			fmt.Fprintf(w, "  %-10s %d\n", s, st.States[s])
			reasons := make([]string, 0, len(st.Reasons[s]))
			for r := range st.Reasons[s] {
				reasons = append(reasons, r)
			}
			sort.Slice(reasons, func(i, j int) bool { return st.Reasons[s][reasons[i]] > st.Reasons[s][reasons[j]] })
			for _, r := range reasons {
				fmt.Fprintf(w, "    %-24s %d\n", r, st.Reasons[s][r])
			}
		}
		fmt.Fprintf(w, "  due for an aged check: %d\n", st.DueForAgedCheck)
	}
}

func statusOfURL(w io.Writer, cfg *config.Config, set *rules.Set, front *frontier.Frontier, raw string, asJSON bool) int {
	src, u, d, err := set.RouteRaw(raw, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %s: %v\n", raw, err)
		return exitUsage
	}
	r, found, err := front.Get(u)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	if !found {
		fmt.Fprintf(os.Stderr, "crawlspace status: %s is not in the state store (never found by a crawl)\n", u)
		return exitFailed
	}
	if s := set.Source(r.Source); s != nil {
		src, d = s, s.Decide(u, r.Depth)
	}
	e := line(u, src, d)
	st := urlStatus{URL: r.URL, Source: r.Source, State: r.State.String(), Reason: r.Reason, Status: r.Status,
		Depth: r.Depth, Class: r.Class.String(), ErrCount: r.ErrCount, TempErrCount: r.TempErrCount,
		FetchedAt: r.FetchedAt, CheckedAt: r.CheckedAt, ETag: r.ETag, LastModified: r.LastModified, Hash: r.Hash,
		Indexed: r.Indexed, DocID: r.DocID, Pending: r.Pending, Target: r.Target, Lastmod: r.Lastmod,
		Decision: &e}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return exitFailed
		}
		return exitOK
	}
	raw2, _ := json.MarshalIndent(st, "", "  ")
	fmt.Fprintln(w, string(raw2))
	return exitOK
}
