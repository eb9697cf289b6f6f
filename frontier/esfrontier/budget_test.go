package esfrontier_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

// notes collects what the budgets kept out, by source and limit.
type notes struct {
	mu sync.Mutex
	by map[[2]string]int
}

func (n *notes) add(o frontier.OverBudget) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.by[[2]string{o.Source, o.Limit.String()}] += o.URLs
}

func (n *notes) get(source string, l frontier.Limit) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.by[[2]string{source, l.String()}]
}

var href = regexp.MustCompile(`href="([^"]+)"`)

// crawlTrap leases from s until the crawl is done, fetching the trap's
// pages and queueing their links; a host that does not resolve is an error.
func crawlTrap(t *testing.T, s *esfrontier.Store) {
	ctx := untilDeadline(t)
	for {
		l, err := s.Next(ctx)
		if errors.Is(err, frontier.ErrDone) {
			return
		}
		if err != nil {
			t.Error(err)
			return
		}
		it := l.Item()
		o := frontier.Outcome{State: frontier.Error, Reason: "dns_failure"}
		if res, err := http.Get(it.URL); err == nil {
			body, _ := io.ReadAll(res.Body)
			res.Body.Close()
			base, _ := url.Parse(it.URL)
			var links []frontier.Item
			for _, m := range href.FindAllStringSubmatch(string(body), -1) {
				u, err := base.Parse(m[1])
				if err != nil {
					t.Error(err)
					continue
				}
				links = append(links, frontier.Item{URL: u.String(), Source: it.Source, Class: frontier.IndexFollow, Depth: it.Depth + 1, Via: it.URL})
			}
			o = frontier.Outcome{State: frontier.Fetched, Status: res.StatusCode, Found: &frontier.Found{Links: links}}
		}
		done := make(chan error, 1)
		if err := l.CompleteAsync(o, func(err error) { done <- err }); err != nil {
			t.Error(err)
			return
		}
		if err := <-done; err != nil {
			t.Error(err)
			return
		}
	}
}

// budgetedStores opens the stores of one crawl in prefix under budgets,
// each named by its node, telling kept what the budgets keep out, with
// maxParallel requests at a time per host.
func budgetedStores(t *testing.T, prefix string, budgets map[string]frontier.Budget, kept *notes, maxParallel int) func(node string) *esfrontier.Store {
	return func(node string) *esfrontier.Store {
		return openWith(t, estest.URL(t), esfrontier.Options{Prefix: prefix, Node: node, Partitions: 8,
			LeaseTTL: 6 * time.Second, Budgets: budgets, OnBudget: kept.add,
			Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: maxParallel} }})
	}
}

// storedBySource counts the URL records of source in the state index, and
// the hosts they are on.
func storedBySource(t *testing.T, prefix, source string) (urls int, hosts map[string]int) {
	t.Helper()
	recs := sourcesOf[struct{ Host string }](t, prefix+"-urls",
		`{"size": 10000, "_source": ["host"], "query": {"term": {"source": "`+source+`"}}}`)
	hosts = map[string]int{}
	for _, r := range recs {
		hosts[r.Host]++
	}
	return len(recs), hosts
}

// Two processes (stores) crawl two spider traps through one shared state:
// t1 under max_urls, t2 under max_urls_per_host and max_hosts (its pages
// also link ever new sites). A host's links are found on the host itself
// here, by the process scheduling it, which counts them exactly (and reads
// the counts again after a refresh when it takes the host over): each
// budget holds exactly, and what it kept out is counted under its reason,
// as the embedded store counts it.
func TestURLBudgetsHoldExactlyWhenTwoProcessesCrawlSpiderTraps(t *testing.T) {
	t.Parallel()
	const maxURLs, maxPerHost, maxHosts, links, offsite = 60, 100, 3, 5, 2
	trap1 := &hostile.Trap{Seed: 11, Links: links}
	trap2 := &hostile.Trap{Seed: 12, Links: links, Offsite: offsite}
	site1, site2 := httptest.NewServer(trap1), httptest.NewServer(trap2)
	t.Cleanup(site1.Close)
	t.Cleanup(site2.Close)
	budgets := map[string]frontier.Budget{"t1": {URLs: maxURLs}, "t2": {URLsPerHost: maxPerHost, Hosts: maxHosts}}
	prefix := estest.Index(t)
	kept := &notes{by: map[[2]string]int{}}
	openBudgeted := budgetedStores(t, prefix, budgets, kept, 2)
	a, b := openBudgeted("a"), openBudgeted("b")
	if _, err := a.BeginCycle(); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Add(frontier.Item{URL: site1.URL + "/", Source: "t1", Class: frontier.Start},
		frontier.Item{URL: site2.URL + "/", Source: "t2", Class: frontier.Start}); err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for _, s := range []*esfrontier.Store{a, a, b, b} {
		wg.Go(func() { crawlTrap(t, s) })
	}
	wg.Wait()

	n1, _ := storedBySource(t, prefix, "t1")
	if n1 != maxURLs {
		t.Errorf("t1 stores %d URLs, want its max_urls %d", n1, maxURLs)
	}
	_, hosts := storedBySource(t, prefix, "t2")
	host2 := strings.TrimSuffix(site2.URL, "/")
	if hosts[host2] != maxPerHost || len(hosts) != maxHosts {
		t.Errorf("t2 stores %d URLs on its trap and URLs on %d hosts (%v), want max_urls_per_host %d and max_hosts %d",
			hosts[host2], len(hosts), hosts, maxPerHost, maxHosts)
	}
	// Every page links new URLs: all but those stored were kept out, each
	// counted once, under the limit that kept it out.
	p1, p2 := int(trap1.Pages()), int(trap2.Pages())
	if got, want := kept.get("t1", frontier.LimitURLs), p1*links-(maxURLs-1); got != want {
		t.Errorf("%d URLs of t1 counted under max_urls, want %d: the links of its %d pages but the %d stored", got, want, p1, maxURLs-1)
	}
	if got, want := kept.get("t2", frontier.LimitURLsPerHost), p2*links-(maxPerHost-1); got != want {
		t.Errorf("%d URLs of t2 counted under max_urls_per_host, want %d", got, want)
	}
	if got, want := kept.get("t2", frontier.LimitHosts), p2*offsite-(maxHosts-1); got != want {
		t.Errorf("%d URLs of t2 counted under max_hosts, want %d", got, want)
	}
	for _, s := range []*esfrontier.Store{a, b} {
		u, err := s.Usage("t1")
		if err != nil {
			t.Fatal(err)
		}
		if u.URLs != maxURLs || u.Refused != int64(p1*links-(maxURLs-1)) || u.Example == "" {
			t.Errorf("%s: t1's usage %+v, want %d URLs and the %d kept out with an example", s.Node(), u, maxURLs, p1*links-(maxURLs-1))
		}
	}
	if u, err := a.Usage("t2"); err != nil || u.Hosts != maxHosts {
		t.Errorf("t2's usage %+v (%v), want %d hosts", u, err, maxHosts)
	}
}
