package provider_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/elastic/go-elasticsearch/v8"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/monitor"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// shrinkingSite is a site of a home page linking n pages, which a test
// takes away (some pages, or all of it) and brings back with fill.
func shrinkingSite(t *testing.T, n int) (*mutableSite, []string) {
	site := newMutableSite(t)
	return site, fill(site, n)
}

// fill serves the home page and its n pages again, and returns their paths.
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

// holdConfig crawls start into the real node with every page due for its
// aged check at every cycle (max_age 1ns), state in Elasticsearch when
// cluster says so; extra goes under the source.
func holdConfig(t *testing.T, esURL, index, start, cluster, extra string) string {
	return fmt.Sprintf(`
elasticsearch: {addresses: [%q], index: %s, replicas: 0, bulk_flush_interval: 50ms}
%s
allow_private_networks: true
sources:
  - name: site
    start_urls: [%q]
    max_age: 1ns
%s`, esURL, index, cluster, start, indent(extra, "    "))
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

// wantHeld checks what the report, the state store (what status and the
// status page read) and the metrics say is held for source "site".
func wantHeld(t *testing.T, c *provider.Crawler, m *monitor.Metrics, report *provider.Report, n, docs int) {
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
	h, err := provider.ReadHeldDeletes(c.Store(), "site")
	switch {
	case err != nil:
		t.Fatal(err)
	case n == 0 && h != nil:
		t.Errorf("the state store says %+v held, want nothing", h)
	case n > 0 && (h == nil || h.Count != n || h.Documents != docs || h.Example == ""):
		t.Errorf("the state store says %+v held, want %d of %d documents with an example", h, n, docs)
	}
	if got := heldGauge(t, m, "site"); got != float64(n) {
		t.Errorf("crawlspace_deletes_held{source=site} is %v, want %d", got, n)
	}
}

// wantPending checks the pending write recorded on each of paths.
func wantPending(t *testing.T, store frontier.Store, base string, pending string, paths ...string) {
	t.Helper()
	for _, p := range paths {
		r, ok, err := store.Get(base + p)
		if err != nil || !ok {
			t.Fatalf("%s: %v (known %v)", p, err, ok)
		}
		if r.Pending != pending {
			t.Errorf("%s has pending write %q, want %q", p, r.Pending, pending)
		}
	}
}

// A site that starts answering 404 everywhere would delete every document
// of its source: the cycle holds the deletes (the documents stay
// searchable, the report, the state store and the metrics say so), and
// the next cycle, which finds the pages gone again, sends them.
func TestASiteAnswering404EverywhereHoldsItsDeletesUntilTheNextCycleDecidesThemAgain(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", ""))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	if r := again(t, c); r.Sources["site"].Created != len(paths) {
		t.Fatalf("the first crawl created %+v, want %d documents", r.Sources["site"], len(paths))
	}

	for _, p := range paths {
		site.remove(p)
	}
	report := again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("after the site answered 404 everywhere the index holds %d documents, want all %d still", len(got), len(paths))
	}
	if d := report.Sources["site"].Deleted; d != 0 {
		t.Errorf("the cycle deleted %d documents, want none", d)
	}
	wantHeld(t, c, m, report, len(paths), len(paths))
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, paths...)

	report = again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 0 {
		t.Errorf("after the next cycle found the pages gone again the index holds %v, want nothing", got)
	}
	if d := report.Sources["site"].Deleted; d != len(paths) {
		t.Errorf("the next cycle deleted %d documents, want %d", d, len(paths))
	}
	wantHeld(t, c, m, report, 0, 0)
	wantPending(t, c.Store(), site.URL, "", paths...)
}

// The same held deletes, when the site is back by the next cycle: nothing
// is deleted, the pages are indexed again and nothing stays held.
func TestHeldDeletesOfPagesThatAreBackAreDroppedAndThePagesIndexedAgain(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", ""))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	for _, p := range paths {
		site.remove(p)
	}
	wantHeld(t, c, m, again(t, c), len(paths), len(paths))

	fill(site, 20)
	report := again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("with the site back the index holds %d documents, want %d", len(got), len(paths))
	}
	if counts := report.Sources["site"]; counts.Deleted != 0 || counts.Updated+counts.Created != len(paths) {
		t.Errorf("with the site back the cycle counted %+v, want every page written again and none deleted", counts)
	}
	wantHeld(t, c, m, report, 0, 0)
	wantPending(t, c.Store(), site.URL, "", paths...)
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

// An operator who knows the pages are gone confirms the held deletes: they
// are sent at once, not at the next cycle.
func TestConfirmingHeldDeletesSendsThemAtOnce(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", ""))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	for _, p := range paths {
		site.remove(p)
	}
	wantHeld(t, c, m, again(t, c), len(paths), len(paths))

	n, err := c.ConfirmDeletes(context.Background(), "site")
	if err != nil || n != len(paths) {
		t.Fatalf("ConfirmDeletes sent %d deletes (%v), want %d", n, err, len(paths))
	}
	refresh(t, esURL, index)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 0 {
		t.Errorf("after the confirmation the index holds %v, want nothing", got)
	}
	wantPending(t, c.Store(), site.URL, "", paths...)
	if h, err := provider.ReadHeldDeletes(c.Store(), "site"); err != nil || h != nil {
		t.Errorf("after the confirmation the state store says %+v held (%v), want nothing", h, err)
	}
	if got := heldGauge(t, m, "site"); got != 0 {
		t.Errorf("crawlspace_deletes_held{source=site} is %v after the confirmation, want 0", got)
	}
	if n, err := c.ConfirmDeletes(context.Background(), "site"); err != nil || n != 0 {
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
			esURL, index := estest.URL(t), estest.Index(t)
			site, paths := shrinkingSite(t, 20)
			cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", tc.keys))
			c := crawltest.New(t, cfg)
			m := monitor.NewMetrics("test", []string{"site"})
			c.SetObserver(m)
			again(t, c)
			gone := paths[len(paths)-tc.remove:]
			for _, p := range gone {
				site.remove(p)
			}
			report := again(t, c)
			if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths)-tc.remove {
				t.Errorf("the index holds %d documents, want %d", len(got), len(paths)-tc.remove)
			}
			if d := report.Sources["site"].Deleted; d != tc.remove {
				t.Errorf("the cycle deleted %d documents, want %d", d, tc.remove)
			}
			wantHeld(t, c, m, report, 0, 0)
			wantPending(t, c.Store(), site.URL, "", gone...)
		})
	}
}

// One delete past the share holds them all: 3 of 21 documents is 14%.
func TestOneDeletePastTheShareHoldsThemAll(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", "hold_deletes: {min_count: 2}"))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	gone := paths[len(paths)-3:]
	for _, p := range gone {
		site.remove(p)
	}
	wantHeld(t, c, m, again(t, c), 3, len(paths))
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, gone...)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("the index holds %d documents, want all %d", len(got), len(paths))
	}
}

// Held deletes live in the state store: a crawler started again finds
// them held, the documents still searchable, and its cycle that finds the
// pages gone again sends them.
func TestHeldDeletesSurviveARestart(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", ""))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	for _, p := range paths {
		site.remove(p)
	}
	wantHeld(t, c, m, again(t, c), len(paths), len(paths))
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	c = crawltest.New(t, cfg)
	if h, err := provider.ReadHeldDeletes(c.Store(), "site"); err != nil || h == nil || h.Count != len(paths) {
		t.Errorf("after a restart the state store says %+v held (%v), want %d", h, err, len(paths))
	}
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, paths...)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("after a restart the index holds %d documents, want %d", len(got), len(paths))
	}
	m = monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	report := again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 0 {
		t.Errorf("after the next cycle the index holds %v, want nothing", got)
	}
	wantHeld(t, c, m, report, 0, 0)
}

// With the state in Elasticsearch the deletes are held in the URLs'
// documents, and confirm-deletes (a crawler that crawls nothing) sends
// them while a process of the crawl holds every partition, without taking
// any from it.
func TestTheClusterStoreHoldsDeletesAndConfirmDeletesSendsThemBesideARunningProcess(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cluster := fmt.Sprintf("cluster: {state_index: %s-state, node_name: solo, partitions: 4, lease_ttl: 5s}", index)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", cluster, ""))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	if r := again(t, c); r.Sources["site"].Created != len(paths) {
		t.Fatalf("the first crawl created %+v, want %d documents", r.Sources["site"], len(paths))
	}
	for _, p := range paths {
		site.remove(p)
	}
	wantHeld(t, c, m, again(t, c), len(paths), len(paths))
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, paths...)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("the index holds %d documents, want all %d", len(got), len(paths))
	}

	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	maint, err := provider.NewMaintenance(cfg, set, sink.Opener(context.Background(), cfg), nil)
	if err != nil {
		t.Fatal(err)
	}
	n, err := maint.ConfirmDeletes(context.Background(), "site")
	if cerr := maint.Close(); err == nil {
		err = cerr
	}
	if err != nil || n != len(paths) {
		t.Fatalf("ConfirmDeletes sent %d deletes (%v), want %d", n, err, len(paths))
	}
	refresh(t, esURL, index)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 0 {
		t.Errorf("after the confirmation the index holds %v, want nothing", got)
	}
	wantPending(t, c.Store(), site.URL, "", paths...)
	if h, err := provider.ReadHeldDeletes(c.Store(), "site"); err != nil || h != nil {
		t.Errorf("after the confirmation the state says %+v held (%v), want nothing", h, err)
	}
	es, err := elasticsearch.NewClient(elasticsearch.Config{Addresses: []string{esURL}})
	if err != nil {
		t.Fatal(err)
	}
	view, err := esfrontier.Open(context.Background(), esfrontier.Options{Client: es, Prefix: index + "-state",
		Node: "reader", Partitions: 4, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	v := view.Cluster()
	for p, h := range v.Holders {
		if h != "solo" {
			t.Errorf("partition %d is held by %q, want the crawling process's", p, h)
		}
	}
	for _, mb := range v.Members {
		if mb.Node != "solo" {
			t.Errorf("the cluster has a member %q, want only the crawling process", mb.Node)
		}
	}
	if r := again(t, c); r.Sources["site"].Deleted != 0 || r.Sources["site"].DeletesHeld != 0 {
		t.Errorf("the next cycle counted %+v, want nothing deleted or held", r.Sources["site"])
	}
}

// Pages no link reaches any more are deleted under orphans: delete; most
// of a source orphaned at once (a menu that lost its links) is held like
// any other cycle's deletes, and the next walk that finds them still
// unreached sends them.
func TestMostOfASourceOrphanedAtOnceIsHeldUntilTheNextWalkFindsThemUnreachedAgain(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", "orphans: delete"))
	c := crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	site.set("/", "Home", "The home page, with its menu broken.", paths[1:6]...)
	orphaned := paths[6:]

	wantHeld(t, c, m, again(t, c), len(orphaned), len(paths))
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, orphaned...)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("the index holds %d documents, want all %d", len(got), len(paths))
	}

	report := again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 6 {
		t.Errorf("after the next walk the index holds %d documents, want the 6 still linked", len(got))
	}
	wantHeld(t, c, m, report, 0, 0)
	wantPending(t, c.Store(), site.URL, "", orphaned...)
}

// A configuration change that excludes most of a source is held too; the
// next cycle, whose crawl space still excludes the pages, sends the deletes.
func TestAConfigChangeExcludingMostOfASourceIsHeldUntilTheNextCycle(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	first := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", ""))
	c := crawltest.New(t, first)
	again(t, c)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	cfg := crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "state_dir: "+first.StateDir, "exclude: [/p/]"))
	c = crawltest.New(t, cfg)
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	wantHeld(t, c, m, again(t, c), len(paths)-1, len(paths))
	wantPending(t, c.Store(), site.URL, frontier.PendingHeld, paths[1:]...)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("the index holds %d documents, want all %d", len(got), len(paths))
	}

	report := again(t, c)
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != 1 {
		t.Errorf("after the next cycle the index holds %v, want the home page alone", got)
	}
	wantHeld(t, c, m, report, 0, 0)
}

// A site that serves one error page, with 200, at every URL: every page
// joins one group of duplicates, whose members' own documents would all be
// deleted. Those deletes are held as well.
func TestASiteServingOneErrorPageEverywhereHoldsTheDuplicatesDeletes(t *testing.T) {
	t.Parallel()
	esURL, index := estest.URL(t), estest.Index(t)
	site, paths := shrinkingSite(t, 20)
	c := crawltest.New(t, crawltest.Config(t, holdConfig(t, esURL, index, site.URL+"/", "", "")))
	m := monitor.NewMetrics("test", []string{"site"})
	c.SetObserver(m)
	again(t, c)
	for _, p := range paths {
		site.set(p, "Maintenance", "We will be back soon.")
	}

	report := again(t, c)
	if report.Sources["site"].DeletesHeld != len(paths)-1 {
		t.Errorf("the cycle held %d deletes, want the %d pages folded into the home page's document", report.Sources["site"].DeletesHeld, len(paths)-1)
	}
	if got, _ := indexed(t, esURL, index, site.URL); len(got) != len(paths) {
		t.Errorf("the index holds %d documents, want all %d", len(got), len(paths))
	}
}
