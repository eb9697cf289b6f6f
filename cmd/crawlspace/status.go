package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
	"github.com/crawlspace/crawlspace/urlnorm"
)

func init() {
	register("status", "show what the state store holds: URLs by state and reason, per source", runStatus)
}

// sourceStatus is one source's line of `status -json`.
type sourceStatus struct {
	Source string `json:"source"`
	// StoreView's AgedCheckDue counts fetched or failed URLs older than
	// max_age (and fetched ones a sitemap says changed): the next crawl
	// revisits them.
	monitor.StoreView
	// NextDiscovery is when the source's start URLs, sitemaps and feeds
	// are next visited by `crawlspace run` (absent: at once).
	NextDiscovery time.Time `json:"next_discovery,omitzero"`
	// Budget is what the source holds against its budget.
	Budget *budgetStatus `json:"budget"`
	// DeletesHeld is what the source's hold_deletes holds (absent: none).
	DeletesHeld *provider.HeldDeletes `json:"deletes_held,omitempty"`
	// CrawlDelays are the hosts keeping the source's politeness whose
	// robots.txt asked for a Crawl-delay, as the last cycle learnt them:
	// the pause kept, and whether politeness.max_crawl_delay cut it.
	CrawlDelays []provider.CrawlDelay `json:"crawl_delays,omitempty"`
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
	Via          string    `json:"found_on,omitempty"`
	// Found is the URL as the site wrote it, what robots.txt and the rules
	// judge, and Requested the URL requested, each where it differs from
	// URL, the key the page is stored and indexed under.
	Found     string `json:"found_as,omitempty"`
	Requested string `json:"requested_as,omitempty"`
	// Orphan: no link reaches the URL any more from its source's start
	// URLs, sitemaps or feeds, as the last cycle that looked found.
	Orphan bool `json:"orphan,omitempty"`
	// Budget says how its source's budget holds the URL back: kept out of
	// the store (State "not_stored"), or waiting for the next cycle.
	Budget string `json:"budget,omitempty"`
	// Decision is what the current configuration decides for the URL.
	Decision *explanation `json:"decision,omitempty"`
	// HostDelay is the pause kept between two requests to the URL's host:
	// its Crawl-delay as the last cycle learnt it, else politeness.delay;
	// absent when none is kept.
	HostDelay *provider.CrawlDelay `json:"host_delay,omitempty"`
	// History is what happened to the URL, oldest first: the last
	// frontier.DefaultHistory events.
	History []historyEntry `json:"history"`
}

// historyEntry is one event of a URL's history.
type historyEntry struct {
	At      time.Time          `json:"at"`
	Event   frontier.EventKind `json:"event"`
	Status  int                `json:"status,omitempty"`
	Bytes   int64              `json:"bytes,omitempty"`
	Seconds float64            `json:"seconds,omitempty"`
	Source  string             `json:"source,omitempty"`
	Queue   string             `json:"queue,omitempty"`
	Depth   int                `json:"depth,omitempty"`
	Via     string             `json:"via,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	Detail  string             `json:"detail,omitempty"`
}

func historyOf(evs []frontier.Event) []historyEntry {
	out := make([]historyEntry, 0, len(evs))
	for _, e := range evs {
		h := historyEntry{At: e.At, Event: e.Kind, Status: e.Status, Bytes: e.Bytes, Seconds: e.Took.Seconds(),
			Source: e.Source, Via: e.Via, Reason: e.Reason, Detail: e.Detail}
		if e.Kind == frontier.EventQueued || e.Kind == frontier.EventRequeued {
			h.Queue, h.Depth = e.Class.String(), e.Depth
		}
		out = append(out, h)
	}
	return out
}

func runStatus(args []string) int {
	fs := newFlags("status")
	path := fs.String("config", "", "configuration file")
	asJSON := fs.Bool("json", false, "print JSON")
	one := fs.String("url", "", "show one URL's stored state, the current decision for it and its history")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	cfg, set, ok := loadConfig(*path, os.Stderr)
	if !ok {
		return exitUsage
	}
	// Read-only: status works on a store it may not write (a read-only
	// file system, no write permission) and never changes one.
	var store statusStore // nil: no crawl has run, every source is empty
	var cluster *esfrontier.Store
	if cfg.Cluster.StateIndex != "" {
		var err error
		if cluster, err = openClusterStatus(cfg); err != nil {
			fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
			return exitFailed
		}
		if cluster != nil {
			defer cluster.Close()
			store = cluster
		}
	} else {
		front, err := frontier.Open(cfg.StateDir, frontier.Options{ReadOnly: true})
		switch {
		case errors.Is(err, iofs.ErrNotExist):
		case err != nil:
			fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
			return exitFailed
		default:
			defer front.Close()
			store = front
		}
	}
	if *one != "" {
		if store == nil {
			fmt.Fprintf(os.Stderr, "crawlspace status: %s is not in the state store (no crawl has run)\n", *one)
			return exitFailed
		}
		return statusOfURL(os.Stdout, cfg, set, store, *one, *asJSON)
	}
	list, err := sourceStatuses(cfg, store)
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
	if err := printIndex(os.Stdout, cfg, store); err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	if cluster != nil {
		printCluster(os.Stdout, cfg.Cluster.StateIndex, cluster.Cluster())
	}
	return exitOK
}

// statusStore is what status reads of a state store.
type statusStore interface {
	frontier.Scanner
	frontier.Meta
	frontier.Reports
}

// sourceStatuses counts each source's URLs; a nil front is a store that
// does not exist yet.
func sourceStatuses(cfg *config.Config, front statusStore) ([]sourceStatus, error) {
	snap := &monitor.Snapshot{}
	if front != nil {
		var err error
		if snap, err = monitor.NewStates(front, cfg).Refresh(); err != nil {
			return nil, err
		}
	}
	var out []sourceStatus
	for i := range cfg.Sources {
		sc := &cfg.Sources[i]
		st := sourceStatus{Source: sc.Name, StoreView: snap.Sources[sc.Name].View()}
		if front == nil {
			out = append(out, st)
			continue
		}
		var err error
		if st.NextDiscovery, err = provider.NextDiscovery(front, sc); err != nil {
			return nil, err
		}
		if st.Budget, err = sourceBudget(front, sc); err != nil {
			return nil, err
		}
		if st.DeletesHeld, err = provider.ReadHeldDeletes(front, sc.Name); err != nil {
			return nil, err
		}
		if st.CrawlDelays, err = provider.CrawlDelays(front, sc.Name); err != nil {
			return nil, err
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
			// By count, ties by name, so the listing reads the same every time.
			sort.Slice(reasons, func(i, j int) bool {
				ni, nj := st.Reasons[s][reasons[i]], st.Reasons[s][reasons[j]]
				return ni > nj || ni == nj && reasons[i] < reasons[j]
			})
			for _, r := range reasons {
				fmt.Fprintf(w, "    %-24s %d\n", r, st.Reasons[s][r])
			}
		}
		if st.Budget != nil {
			printBudget(w, st.Budget)
		}
		if h := st.DeletesHeld; h != nil {
			fmt.Fprintf(w, "  deletes held: %d of %d documents (%d%%, more than hold_deletes.percent %d and min_count %d) since %s, cycle %d; such as %s\n",
				h.Count, h.Documents, h.Share(), h.Percent, h.MinCount, h.Since.Local().Format("2006-01-02 15:04:05 MST"), h.Cycle, h.Example)
			fmt.Fprintf(w, "    their documents stay in the index: the next cycle sends those it decides again; crawlspace confirm-deletes -config F -source %s sends them now\n", st.Source)
		}
		for _, d := range st.CrawlDelays {
			fmt.Fprintf(w, "  crawl-delay: %s keeps %s\n", d.Host, d)
		}
		fmt.Fprintf(w, "  due for an aged check: %d\n", st.AgedCheckDue)
		if st.NextDiscovery.IsZero() {
			fmt.Fprintln(w, "  next discovery: at the next start")
		} else {
			fmt.Fprintf(w, "  next discovery: %s\n", st.NextDiscovery.Local().Format("2006-01-02 15:04:05 MST"))
		}
	}
}

// printIndex says what searches see and what a crawl is building: the
// target last published, a rebuild under way, and one the configuration
// asks for (a new mapping, other embeddings) that the next crawl starts.
func printIndex(w io.Writer, cfg *config.Config, front statusStore) error {
	var published, building string
	if front != nil {
		var err error
		if published, building, err = provider.Targets(front); err != nil {
			return err
		}
	}
	want := sink.TargetOf(cfg)
	if published == "" {
		fmt.Fprintln(w, "index: nothing published yet")
	} else {
		fmt.Fprintf(w, "index: %s\n", published)
	}
	switch {
	case want == published:
	case want == building && published != "":
		fmt.Fprintf(w, "  rebuilding: %s; every document is written there again (with embeddings, passages whose text or model changed are embedded again); searches see the index above until it is done\n", want)
	case published != "":
		fmt.Fprintf(w, "  next crawl rebuilds: %s, as the configuration now asks; every document is written again (with embeddings, passages whose text or model changed are embedded again)\n", want)
	default:
		fmt.Fprintf(w, "  next crawl writes: %s\n", want)
	}
	return nil
}

func statusOfURL(w io.Writer, cfg *config.Config, set *rules.Set, front statusStore, raw string, asJSON bool) int {
	src, u, found, d, err := set.RouteRaw(raw, 0)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %s: %v\n", raw, err)
		return exitUsage
	}
	r, stored, err := front.Get(u)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	var held string
	if sc := cfg.SourceByName(src.Name); sc != nil {
		if !stored {
			held, err = notStored(front, sc, u)
		} else if r.State == frontier.Waiting {
			held, err = heldBack(front, sc, u)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
			return exitFailed
		}
	}
	if !stored && held == "" {
		fmt.Fprintf(os.Stderr, "crawlspace status: %s is not in the state store (never found by a crawl)\n", u)
		return exitFailed
	}
	if !stored {
		r = frontier.Record{Item: frontier.Item{URL: u, Source: src.Name}}
		r.SetFoundAs(found)
	}
	found = r.AsFound()
	requested := r.URL
	if s := set.Source(r.Source); s != nil {
		src = s
		_, d = s.DecideFound(found, r.Depth)
		requested = s.Request(r.URL, r.FoundAs)
	}
	evs, err := front.History(u)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	e := withAuth(cfg, set, line(found, src, d))
	hostDelay, err := storedHostDelay(cfg, set, front, e.Fetch)
	if err != nil {
		fmt.Fprintf(os.Stderr, "crawlspace status: %v\n", err)
		return exitFailed
	}
	st := urlStatus{URL: r.URL, Source: r.Source, State: r.State.String(), Reason: r.Reason, Status: r.Status,
		Depth: r.Depth, Class: r.Class.String(), ErrCount: r.ErrCount, TempErrCount: r.TempErrCount,
		FetchedAt: r.FetchedAt, CheckedAt: r.CheckedAt, ETag: r.ETag, LastModified: r.LastModified, Hash: r.Hash,
		Indexed: r.Indexed, DocID: r.DocID, Pending: r.Pending, Target: r.Target, Lastmod: r.Lastmod, Via: r.Via,
		Orphan: r.Orphan, Budget: held, Decision: &e, HostDelay: hostDelay, History: historyOf(evs)}
	if found != r.URL {
		st.Found = found
	}
	if requested != r.URL {
		st.Requested = requested
	}
	if !stored {
		st.State, st.Class = "not_stored", ""
	}
	if asJSON {
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		if err := enc.Encode(st); err != nil {
			return exitFailed
		}
		return exitOK
	}
	printURLStatus(w, &st)
	return exitOK
}

// storedHostDelay is the pause the crawl keeps between two requests to
// u's host: with the Crawl-delay the last cycle learnt of it, if any; nil
// when it keeps none.
func storedHostDelay(cfg *config.Config, set *rules.Set, front frontier.Meta, u string) (*provider.CrawlDelay, error) {
	host := urlnorm.Origin(u)
	owner := set.HostOwner(host)
	if owner == nil {
		return nil, nil
	}
	learnt, err := provider.CrawlDelays(front, owner.Name)
	if err != nil {
		return nil, err
	}
	var asked time.Duration
	if i := slices.IndexFunc(learnt, func(d provider.CrawlDelay) bool { return d.Host == host }); i >= 0 {
		asked = learnt[i].Asked
	}
	d := provider.PolitenessDelay(cfg, set, host, asked)
	if d.Delay <= 0 {
		return nil, nil
	}
	return &d, nil
}

// printURLStatus prints one URL's state, decision and history for people.
func printURLStatus(w io.Writer, st *urlStatus) {
	fmt.Fprintln(w, st.URL)
	state := st.State
	if st.Reason != "" {
		state += " (" + st.Reason + ")"
	}
	if st.Status != 0 {
		state += fmt.Sprintf(", last status %d", st.Status)
	}
	if st.State == "not_stored" {
		fmt.Fprintf(w, "  source %s, not in the state store\n", st.Source)
	} else {
		fmt.Fprintf(w, "  source %s, %s, depth %d, queue %s\n", st.Source, state, st.Depth, st.Class)
	}
	if st.Found != "" {
		fmt.Fprintf(w, "  found as %s\n", st.Found)
	}
	if st.Requested != "" {
		fmt.Fprintf(w, "  requested as %s\n", st.Requested)
	}
	if st.Via != "" {
		fmt.Fprintf(w, "  found on %s\n", st.Via)
	}
	if !st.CheckedAt.IsZero() {
		fmt.Fprintf(w, "  last checked %s, last fetched %s\n", stamp(st.CheckedAt), stamp(st.FetchedAt))
	}
	if st.ErrCount > 0 || st.TempErrCount > 0 {
		fmt.Fprintf(w, "  errors in a row: %d permanent, %d temporary\n", st.ErrCount, st.TempErrCount)
	}
	idx := "not indexed"
	if st.Indexed {
		idx = "indexed as " + st.DocID
	}
	switch st.Pending {
	case "":
	case frontier.PendingHold:
		idx += ", its delete held back until the end of the cycle (hold_deletes)"
	case frontier.PendingHeld:
		idx += ", its delete held: the cycle that decided it would have deleted too many of the source's documents (hold_deletes)"
	default:
		idx += ", " + st.Pending + " write awaiting acknowledgement"
	}
	if st.Target != "" {
		idx += ", document held by " + st.Target
	}
	fmt.Fprintf(w, "  %s\n", idx)
	if st.Orphan {
		fmt.Fprintln(w, "  an orphan: no link reaches it from the start URLs, sitemaps or feeds")
	}
	if st.Budget != "" {
		fmt.Fprintf(w, "  budget: %s\n", st.Budget)
	}
	if d := st.Decision; d != nil {
		fmt.Fprintf(w, "  the configuration now: crawl %s, index %s, follow %s, reason %s, rule %s\n",
			yesNo(d.Crawl), yesNo(d.Index), yesNo(d.Follow), dash(d.Reason), dash(d.Rule))
		if d.Auth != "" {
			fmt.Fprintf(w, "  authentication: %s\n", d.Auth)
		}
	}
	if st.HostDelay != nil {
		fmt.Fprintf(w, "  the host's delay: %s\n", st.HostDelay)
	}
	if len(st.History) == 0 {
		fmt.Fprintln(w, "  no history recorded")
		return
	}
	fmt.Fprintln(w, "history, oldest first:")
	for _, h := range st.History {
		fmt.Fprintf(w, "  %s  %-12s %s\n", stamp(h.At), h.Event, describe(h))
	}
}

func stamp(t time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.UTC().Format("2006-01-02 15:04:05.000Z")
}

// describe is an event's details in words.
func describe(h historyEntry) string {
	var parts []string
	add := func(f string, a ...any) { parts = append(parts, fmt.Sprintf(f, a...)) }
	if h.Status != 0 {
		add("status %d", h.Status)
	}
	if h.Reason != "" {
		add("%s", h.Reason)
	}
	if h.Queue != "" {
		add("queue %s, depth %d", h.Queue, h.Depth)
	}
	if h.Source != "" {
		add("source %s", h.Source)
	}
	if h.Via != "" {
		add("via %s", h.Via)
	}
	if h.Bytes > 0 || h.Seconds > 0 {
		add("%d bytes in %s", h.Bytes, time.Duration(h.Seconds*float64(time.Second)).Round(time.Millisecond))
	}
	if h.Detail != "" {
		add("%s", h.Detail)
	}
	return strings.Join(parts, ", ")
}
