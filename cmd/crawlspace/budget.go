package main

import (
	"fmt"
	"io"
	"strings"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// budgetStatus is a source's budget and what the store holds against it.
type budgetStatus struct {
	URLs    int64 `json:"urls"`
	MaxURLs int64 `json:"max_urls"`
	Hosts   int64 `json:"hosts"`
	// MaxHosts bounds the hosts the source queues URLs on.
	MaxHosts int64 `json:"max_hosts"`
	// Pages are the requests of Cycle, the last cycle begun.
	Cycle           uint64 `json:"cycle"`
	Pages           int64  `json:"pages"`
	MaxPages        int64  `json:"max_pages_per_cycle"`
	MaxURLsPerHost  int64  `json:"max_urls_per_host"`
	MaxPagesPerHost int64  `json:"max_pages_per_host_per_cycle"`
	// Refused counts the URLs a URL limit kept out of the store, ever;
	// RefusedExample is the first of them.
	Refused        int64  `json:"refused"`
	RefusedExample string `json:"refused_example,omitempty"`
	// Reached names the source's limits it is at.
	Reached []string `json:"reached,omitempty"`
	// HostsReached are the first hosts at a per-host limit, in host
	// order; MoreHostsReached counts the others.
	HostsReached     []hostBudget `json:"hosts_reached,omitempty"`
	MoreHostsReached int          `json:"more_hosts_reached,omitempty"`
}

// hostBudget is what a source holds on one host at a per-host limit.
type hostBudget struct {
	Host    string   `json:"host"`
	URLs    int64    `json:"urls"`
	Pages   int64    `json:"pages"`
	Refused int64    `json:"refused"`
	Reached []string `json:"reached"`
}

// hostsListed bounds the hosts at their budget that status lists.
const hostsListed = 10

func sourceBudget(front statusStore, sc *config.Source) (*budgetStatus, error) {
	u, err := front.Usage(sc.Name)
	if err != nil {
		return nil, err
	}
	cycle := front.Cycle()
	b := sc.Budget
	st := &budgetStatus{URLs: u.URLs, MaxURLs: b.MaxURLs, Hosts: u.Hosts, MaxHosts: b.MaxHosts,
		Cycle: cycle, Pages: u.PagesIn(cycle), MaxPages: b.MaxPagesPerCycle,
		MaxURLsPerHost: b.MaxURLsPerHost, MaxPagesPerHost: b.MaxPagesPerHostPerCycle,
		Refused: u.Refused, RefusedExample: u.Example}
	st.Reached = reached(st.Reached, u.URLs, b.MaxURLs, frontier.LimitURLs)
	st.Reached = reached(st.Reached, u.Hosts, b.MaxHosts, frontier.LimitHosts)
	st.Reached = reached(st.Reached, st.Pages, b.MaxPagesPerCycle, frontier.LimitPages)
	hosts, err := front.HostUsages(sc.Name)
	if err != nil {
		return nil, err
	}
	for _, h := range hosts {
		hb := hostBudget{Host: h.Host, URLs: h.URLs, Pages: h.PagesIn(cycle), Refused: h.Refused}
		hb.Reached = reached(hb.Reached, h.URLs, b.MaxURLsPerHost, frontier.LimitURLsPerHost)
		hb.Reached = reached(hb.Reached, hb.Pages, b.MaxPagesPerHostPerCycle, frontier.LimitPagesPerHost)
		switch {
		case len(hb.Reached) == 0:
		case len(st.HostsReached) < hostsListed:
			st.HostsReached = append(st.HostsReached, hb)
		default:
			st.MoreHostsReached++
		}
	}
	return st, nil
}

func reached(list []string, n, limit int64, l frontier.Limit) []string {
	if limit > 0 && n >= limit {
		return append(list, l.String())
	}
	return list
}

func printBudget(w io.Writer, b *budgetStatus) {
	fmt.Fprintf(w, "  budget: %d of %d URLs, %d of %d hosts, %d of %d requests in cycle %d\n",
		b.URLs, b.MaxURLs, b.Hosts, b.MaxHosts, b.Pages, b.MaxPages, b.Cycle)
	if len(b.Reached) > 0 {
		fmt.Fprintf(w, "  budget reached: %s\n", strings.Join(b.Reached, ", "))
	}
	if len(b.HostsReached) > 0 {
		fmt.Fprintln(w, "  hosts at their budget:")
		for _, h := range b.HostsReached {
			fmt.Fprintf(w, "    %s  %d of %d URLs, %d of %d requests in cycle %d: %s reached\n",
				h.Host, h.URLs, b.MaxURLsPerHost, h.Pages, b.MaxPagesPerHost, b.Cycle, strings.Join(h.Reached, ", "))
		}
		if b.MoreHostsReached > 0 {
			fmt.Fprintf(w, "    and %d more\n", b.MoreHostsReached)
		}
	}
	if b.Refused > 0 {
		fmt.Fprintf(w, "  URLs a budget kept out of the store: %d, the first %s\n", b.Refused, b.RefusedExample)
	}
}

// notStored says why a URL the store does not know may have been kept out:
// its source at a URL limit that covers it. Empty when none does.
func notStored(front statusStore, sc *config.Source, url string) (string, error) {
	u, err := front.Usage(sc.Name)
	if err != nil {
		return "", err
	}
	host := urlnorm.Origin(url)
	h, known, err := front.HostUsage(sc.Name, host)
	if err != nil {
		return "", err
	}
	b := sc.Budget
	var why string
	switch {
	case u.URLs >= b.MaxURLs:
		why = fmt.Sprintf("source %s holds %d URLs, its max_urls %d", sc.Name, u.URLs, b.MaxURLs)
	case h.URLs >= b.MaxURLsPerHost:
		why = fmt.Sprintf("source %s holds %d URLs on %s, its max_urls_per_host %d", sc.Name, h.URLs, host, b.MaxURLsPerHost)
	case (!known || !h.Queued) && u.Hosts >= b.MaxHosts:
		why = fmt.Sprintf("source %s queues URLs on %d hosts, its max_hosts %d, and %s is not one of them", sc.Name, u.Hosts, b.MaxHosts, host)
	default:
		return "", nil
	}
	return fmt.Sprintf("%s: a URL found beyond its budget is counted, not stored (%d so far, the first %s)", why, u.Refused, u.Example), nil
}

// heldBack says why a URL still waits at the end of a cycle: a page limit
// its source or host reached in it. Empty when none did.
func heldBack(front statusStore, sc *config.Source, url string) (string, error) {
	cycle := front.Cycle()
	u, err := front.Usage(sc.Name)
	if err != nil {
		return "", err
	}
	b := sc.Budget
	if p := u.PagesIn(cycle); p >= b.MaxPagesPerCycle {
		return fmt.Sprintf("source %s made %d requests in cycle %d, its max_pages_per_cycle %d: the URL waits for the next cycle", sc.Name, p, cycle, b.MaxPagesPerCycle), nil
	}
	host := urlnorm.Origin(url)
	h, _, err := front.HostUsage(sc.Name, host)
	if err != nil {
		return "", err
	}
	if p := h.PagesIn(cycle); p >= b.MaxPagesPerHostPerCycle {
		return fmt.Sprintf("source %s made %d requests to %s in cycle %d, its max_pages_per_host_per_cycle %d: the URL waits for the next cycle", sc.Name, p, host, cycle, b.MaxPagesPerHostPerCycle), nil
	}
	return "", nil
}
