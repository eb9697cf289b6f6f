package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// holdCrawl is a source "site" of a home page linking 20 pages, crawled
// once into the real node, every page due for its aged check at every
// cycle (max_age 1ns), with the crawler's metrics to read.
type holdCrawl struct {
	esURL, index string
	site         *mutableSite
	paths        []string // the home page's and its pages'
	cfg          *config.Config
	c            *provider.Crawler
	m            *monitor.Metrics
}

// newHoldCrawl crawls the site once; cluster (a cluster block, or a
// state_dir) goes at the top of the config, extra under the source.
func newHoldCrawl(t *testing.T, cluster, extra string) *holdCrawl {
	t.Helper()
	h := &holdCrawl{esURL: estest.URL(t), index: estest.Index(t), site: newMutableSite(t)}
	h.paths = fill(h.site, 20)
	h.cfg = h.config(t, cluster, extra)
	h.open(t)
	if r := again(t, h.c); r.Sources["site"].Created != len(h.paths) {
		t.Fatalf("the first crawl created %+v, want %d documents", r.Sources["site"], len(h.paths))
	}
	return h
}

// config is the crawl's configuration with top at its top and extra under
// the source.
func (h *holdCrawl) config(t *testing.T, top, extra string) *config.Config {
	return crawltest.Config(t, fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
%s
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ns
%s`, h.esURL, h.index, top, h.site.URL+"/", indent(extra, "    ")))
}

// open starts a crawler on the configuration, with metrics of its own.
func (h *holdCrawl) open(t *testing.T) {
	h.c = crawltest.New(t, h.cfg)
	h.m = monitor.NewMetrics("test", []string{"site"})
	h.c.SetObserver(h.m)
}

// fill serves the home page and its n pages, and returns their paths.
func fill(site *mutableSite, n int) []string {
	var paths []string
	for i := range n {
		paths = append(paths, fmt.Sprintf("/p/%d", i))
	}
	site.set("/", "Home", "The home page.", paths...)
	for _, p := range paths {
		site.set(p, "Page "+p, "A page of the site, "+p+".")
	}
	return append([]string{"/"}, paths...)
}

// remove makes paths answer 404.
func (h *holdCrawl) remove(paths ...string) {
	for _, p := range paths {
		h.site.remove(p)
	}
}

// goneEverywhere makes the site answer 404 everywhere and runs a cycle,
// which holds every delete.
func (h *holdCrawl) goneEverywhere(t *testing.T) {
	t.Helper()
	h.remove(h.paths...)
	h.wantHeld(t, again(t, h.c), len(h.paths), len(h.paths))
}

// wantKept checks that the deletes of paths are held and that every
// document is still in the index.
func (h *holdCrawl) wantKept(t *testing.T, paths ...string) {
	t.Helper()
	h.wantPending(t, frontier.PendingHeld, paths...)
	h.wantIndexed(t, len(h.paths), "with the deletes held")
}

// wantConfirmed checks what a confirmation that sent n deletes left:
// every held delete sent and landed, nothing held.
func (h *holdCrawl) wantConfirmed(t *testing.T, n int, err error) {
	t.Helper()
	if err != nil || n != len(h.paths) {
		t.Fatalf("ConfirmDeletes sent %d deletes (%v), want %d", n, err, len(h.paths))
	}
	refresh(t, h.esURL, h.index)
	h.wantIndexed(t, 0, "after the confirmation")
	h.wantPending(t, "", h.paths...)
	if held, err := provider.ReadHeldDeletes(h.c.Store(), "site"); err != nil || held != nil {
		t.Errorf("after the confirmation the state says %+v held (%v), want nothing", held, err)
	}
}

// nextCycleSends runs the next cycle, which decides the held deletes again
// and sends them: left documents stay, nothing is held.
func (h *holdCrawl) nextCycleSends(t *testing.T, left int) *provider.Report {
	t.Helper()
	report := again(t, h.c)
	h.wantIndexed(t, left, "after the next cycle")
	h.wantHeld(t, report, 0, 0)
	return report
}

// wantIndexed checks how many of the site's documents the alias holds.
func (h *holdCrawl) wantIndexed(t *testing.T, n int, when string) {
	t.Helper()
	if got, _ := indexed(t, h.esURL, h.index, h.site.URL); len(got) != n {
		t.Errorf("%s the index holds %d documents, want %d", when, len(got), n)
	}
}

// wantHeld checks what the report, the state store (what status and the
// status page read) and the metrics say is held for the source.
func (h *holdCrawl) wantHeld(t *testing.T, report *provider.Report, n, docs int) {
	t.Helper()
	counts := report.Sources["site"]
	if counts == nil || counts.DeletesHeld != n {
		t.Errorf("the report counts %+v deletes held, want %d", counts, n)
	}
	warned := false
	for _, w := range report.Warnings {
		warned = warned || strings.Contains(w, fmt.Sprintf("source site: %d deletes held", n))
	}
	if warned != (n > 0) {
		t.Errorf("report warnings %q; want one saying %d deletes are held: %v", report.Warnings, n, n > 0)
	}
	held, err := provider.ReadHeldDeletes(h.c.Store(), "site")
	switch {
	case err != nil:
		t.Fatal(err)
	case n == 0 && held != nil:
		t.Errorf("the state store says %+v held, want nothing", held)
	case n > 0 && (held == nil || held.Count != n || held.Documents != docs || held.Example == ""):
		t.Errorf("the state store says %+v held, want %d of %d documents with an example", held, n, docs)
	}
	if got := heldGauge(t, h.m, "site"); got != float64(n) {
		t.Errorf("crawlspace_deletes_held{source=site} is %v, want %d", got, n)
	}
}

// wantPending checks the pending write recorded on each of paths.
func (h *holdCrawl) wantPending(t *testing.T, pending string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		r, ok, err := h.c.Store().Get(h.site.URL + p)
		if err != nil || !ok {
			t.Fatalf("%s: %v (known %v)", p, err, ok)
		}
		if r.Pending != pending {
			t.Errorf("%s has pending write %q, want %q", p, r.Pending, pending)
		}
	}
}

// heldGauge reads crawlspace_deletes_held{source} from m.
func heldGauge(t *testing.T, m *monitor.Metrics, source string) float64 {
	t.Helper()
	families, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != "crawlspace_deletes_held" {
			continue
		}
		for _, metric := range f.Metric {
			for _, l := range metric.Label {
				if l.GetName() == "source" && l.GetValue() == source {
					return metric.GetGauge().GetValue()
				}
			}
		}
	}
	t.Fatalf("no crawlspace_deletes_held{source=%q}", source)
	return 0
}

// refresh makes what the node holds searchable: the deletes a command sends
// are in the index at once, and searchable at its next refresh.
func refresh(t *testing.T, esURL, index string) {
	t.Helper()
	res, err := http.Post(esURL+"/"+index+"/_refresh", "application/json", nil)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("refresh %s: %s", index, res.Status)
	}
}

// A site that starts answering 404 everywhere would delete every document
// of its source: the cycle holds the deletes (the documents stay
// searchable, the report, the state store and the metrics say so), and
// the next cycle, which finds the pages gone again, sends them.
func TestASiteAnswering404EverywhereHoldsItsDeletesUntilTheNextCycleDecidesThemAgain(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	h.remove(h.paths...)
	report := again(t, h.c)
	if d := report.Sources["site"].Deleted; d != 0 {
		t.Errorf("the cycle deleted %d documents, want none", d)
	}
	h.wantHeld(t, report, len(h.paths), len(h.paths))
	h.wantKept(t, h.paths...)

	report = h.nextCycleSends(t, 0)
	if d := report.Sources["site"].Deleted; d != len(h.paths) {
		t.Errorf("the next cycle deleted %d documents, want %d", d, len(h.paths))
	}
	h.wantPending(t, "", h.paths...)
}

// The same held deletes, when the site is back by the next cycle: nothing
// is deleted, the pages are indexed again and nothing stays held.
func TestHeldDeletesOfPagesThatAreBackAreDroppedAndThePagesIndexedAgain(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	h.goneEverywhere(t)

	fill(h.site, 20)
	report := again(t, h.c)
	h.wantIndexed(t, len(h.paths), "with the site back")
	if counts := report.Sources["site"]; counts.Deleted != 0 || counts.Updated+counts.Created != len(h.paths) {
		t.Errorf("with the site back the cycle counted %+v, want every page written again and none deleted", counts)
	}
	h.wantHeld(t, report, 0, 0)
	h.wantPending(t, "", h.paths...)
}

// An operator who knows the pages are gone confirms the held deletes: they
// are sent at once, not at the next cycle.
func TestConfirmingHeldDeletesSendsThemAtOnce(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	h.goneEverywhere(t)

	n, err := h.c.ConfirmDeletes(context.Background(), "site")
	h.wantConfirmed(t, n, err)
	if got := heldGauge(t, h.m, "site"); got != 0 {
		t.Errorf("crawlspace_deletes_held{source=site} is %v after the confirmation, want 0", got)
	}
	if n, err := h.c.ConfirmDeletes(context.Background(), "site"); err != nil || n != 0 {
		t.Errorf("a second confirmation sent %d deletes (%v), want none", n, err)
	}
}

// Deletes within the source's hold_deletes go as they always did: up to
// min_count whatever their share, and any number within the share.
func TestACycleWithinTheShareDeletesAsBefore(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, keys string
		remove     int
	}{
		{"min_count", "", 10},                              // 10 of 21: 47%, but no more than min_count 10
		{"percent", "hold_deletes: {min_count: 0}", 2},     // 2 of 21: 9.5%, within 10%
		{"turned off", "hold_deletes: {percent: 100}", 21}, // everything
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			h := newHoldCrawl(t, "", tc.keys)
			gone := h.paths[len(h.paths)-tc.remove:]
			h.remove(gone...)
			report := again(t, h.c)
			h.wantIndexed(t, len(h.paths)-tc.remove, "after the cycle")
			if d := report.Sources["site"].Deleted; d != tc.remove {
				t.Errorf("the cycle deleted %d documents, want %d", d, tc.remove)
			}
			h.wantHeld(t, report, 0, 0)
			h.wantPending(t, "", gone...)
		})
	}
}

// One delete past the share holds them all: 3 of 21 documents is 14%.
func TestOneDeletePastTheShareHoldsThemAll(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "hold_deletes: {min_count: 2}")
	gone := h.paths[len(h.paths)-3:]
	h.remove(gone...)
	h.wantHeld(t, again(t, h.c), 3, len(h.paths))
	h.wantKept(t, gone...)
}

// Held deletes live in the state store: a crawler started again finds
// them held, the documents still searchable, and its cycle that finds the
// pages gone again sends them.
func TestHeldDeletesSurviveARestart(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	h.goneEverywhere(t)
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}

	h.open(t)
	if held, err := provider.ReadHeldDeletes(h.c.Store(), "site"); err != nil || held == nil || held.Count != len(h.paths) {
		t.Errorf("after a restart the state store says %+v held (%v), want %d", held, err, len(h.paths))
	}
	h.wantKept(t, h.paths...)
	h.nextCycleSends(t, 0)
}

// With the state in Elasticsearch the deletes are held in the URLs'
// documents, and confirm-deletes (a crawler that crawls nothing) sends
// them while a process of the crawl holds every partition, without taking
// any from it.
func TestTheClusterStoreHoldsDeletesAndConfirmDeletesSendsThemBesideARunningProcess(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	h := newHoldCrawl(t, fmt.Sprintf("cluster: {state_index: %s, node_name: solo, partitions: 4, lease_ttl: 5s}", prefix), "")
	h.goneEverywhere(t)
	h.wantKept(t, h.paths...)

	set, err := rules.Compile(h.cfg)
	if err != nil {
		t.Fatal(err)
	}
	maint, err := provider.NewMaintenance(h.cfg, set, sink.Opener(context.Background(), h.cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := maint.ConfirmDeletes(context.Background(), "site")
	if cerr := maint.Close(); err == nil {
		err = cerr
	}
	h.wantConfirmed(t, n, err)
	es, err := esclient.New(esclient.Config{Addresses: []string{h.esURL}})
	if err != nil {
		t.Fatal(err)
	}
	view, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: prefix,
		Node: "reader", Partitions: 4, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	v := view.Cluster()
	for p, holder := range v.Holders {
		if holder != "solo" {
			t.Errorf("partition %d is held by %q, want the crawling process's", p, holder)
		}
	}
	for _, mb := range v.Members {
		if mb.Node != "solo" {
			t.Errorf("the cluster has a member %q, want only the crawling process", mb.Node)
		}
	}
	if r := again(t, h.c); r.Sources["site"].Deleted != 0 || r.Sources["site"].DeletesHeld != 0 {
		t.Errorf("the next cycle counted %+v, want nothing deleted or held", r.Sources["site"])
	}
}

// Pages no link reaches any more are deleted under orphans: delete; most
// of a source orphaned at once (a menu that lost its links) is held like
// any other cycle's deletes, and the next walk that finds them still
// unreached sends them.
func TestMostOfASourceOrphanedAtOnceIsHeldUntilTheNextWalkFindsThemUnreachedAgain(t *testing.T) {
	t.Parallel()
	for _, store := range []string{"embedded", "cluster"} {
		t.Run(store, func(t *testing.T) {
			t.Parallel()
			top := ""
			if store == "cluster" {
				top = fmt.Sprintf("cluster: {state_index: %s, node_name: solo, partitions: 4, lease_ttl: 5s}", estest.Index(t))
			}
			h := newHoldCrawl(t, top, "orphans: delete")
			h.site.set("/", "Home", "The home page, with its menu broken.", h.paths[1:6]...)
			orphaned := h.paths[6:]

			h.wantHeld(t, again(t, h.c), len(orphaned), len(h.paths))
			h.wantKept(t, orphaned...)

			h.nextCycleSends(t, 6)
			h.wantPending(t, "", orphaned...)
		})
	}
}

// A configuration change that excludes most of a source is held too; the
// next cycle, whose crawl space still excludes the pages, sends the deletes.
func TestAConfigChangeExcludingMostOfASourceIsHeldUntilTheNextCycle(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	if err := h.c.Close(); err != nil {
		t.Fatal(err)
	}
	h.cfg = h.config(t, "state_dir: "+h.cfg.StateDir, "exclude: [/p/]")
	h.open(t)
	h.wantHeld(t, again(t, h.c), len(h.paths)-1, len(h.paths))
	h.wantKept(t, h.paths[1:]...)
	h.nextCycleSends(t, 1)
}

// A site that serves one error page, with 200, at every URL: every page
// joins one group of duplicates, whose members' own documents would all be
// deleted. Those deletes are held as well.
func TestASiteServingOneErrorPageEverywhereHoldsTheDuplicatesDeletes(t *testing.T) {
	t.Parallel()
	h := newHoldCrawl(t, "", "")
	for _, p := range h.paths {
		h.site.set(p, "Maintenance", "We will be back soon.")
	}
	report := again(t, h.c)
	if report.Sources["site"].DeletesHeld != len(h.paths)-1 {
		t.Errorf("the cycle held %d deletes, want the %d pages folded into the home page's document", report.Sources["site"].DeletesHeld, len(h.paths)-1)
	}
	h.wantIndexed(t, len(h.paths), "with the duplicates' deletes held")
}
