package esfrontier_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/frontier/esfrontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/internal/fakeclock"
	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// openVia is open through addr (a fault proxy) instead of the node.
func openVia(t *testing.T, addr, prefix, node string, ttl time.Duration) *esfrontier.Store {
	t.Helper()
	return openWith(t, addr, esfrontier.Options{Prefix: prefix, Node: node, Partitions: 8, LeaseTTL: ttl,
		Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1} }})
}

// openWith opens a store with opt through addr, closed when the test ends.
func openWith(t *testing.T, addr string, opt esfrontier.Options) *esfrontier.Store {
	t.Helper()
	// As the crawl's client (sink.Client): no retries of its own.
	es, err := esclient.New(esclient.Config{Addresses: []string{addr}, DisableRetry: true})
	if err != nil {
		t.Fatal(err)
	}
	opt.Client = es
	s, err := esfrontier.Open(context.Background(), opt)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// untilDeadline ends shortly before go test's -timeout would, so that a
// wait that never ends fails with what it saw rather than a stack dump.
func untilDeadline(t *testing.T) context.Context {
	ctx := context.Background()
	if d, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, d.Add(-30*time.Second))
		t.Cleanup(cancel)
	}
	return ctx
}

// sourcesOf searches index, after a refresh, with query and decodes each
// hit's _source into a T.
func sourcesOf[T any](t *testing.T, index, query string) []T {
	t.Helper()
	es := estest.Client(t)
	es.Indices.Refresh(es.Indices.Refresh.WithIndex(index))
	resp, err := es.Search(es.Search.WithIndex(index), es.Search.WithBody(strings.NewReader(query)))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var ans struct {
		Hits struct {
			Hits []struct {
				Source T `json:"_source"`
			}
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
		t.Fatal(err)
	}
	out := make([]T, len(ans.Hits.Hits))
	for i, h := range ans.Hits.Hits {
		out[i] = h.Source
	}
	return out
}

// leases reads the lease documents of prefix's crawl: holder and expiry
// (Unix nanoseconds) by partition.
func leases(t *testing.T, prefix string) map[int]struct {
	Holder  string
	Expires int64
} {
	t.Helper()
	type lease struct {
		Part    int
		Holder  string
		Expires int64
	}
	hits := sourcesOf[lease](t, prefix+"-meta", `{"size": 100, "query": {"term": {"type": "lease"}}}`)
	out := map[int]struct {
		Holder  string
		Expires int64
	}{}
	for _, l := range hits {
		out[l.Part] = struct {
			Holder  string
			Expires int64
		}{l.Holder, l.Expires}
	}
	return out
}

// A round's writes may be applied by the node though their answer never
// came back (a timeout on a busy node): the next round finds the leases
// that name this process and adopts them. Adopted in a round that fails
// again, they were held, renewed, and never scheduled: their URLs stayed
// Waiting for ever and no process of the crawl ever ended its cycle.
func TestPartitionsTakenInRoundsWhoseAnswersWereLostAreScheduledOnceARoundSucceeds(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	a := open(t, prefix, "a", 3*time.Second)
	a.BeginCycle()
	var want []string
	for h := range 16 {
		u := fmt.Sprintf("http://h%d.test/", h)
		want = append(want, u)
		if _, err := a.Add(item(u)); err != nil {
			t.Fatal(err)
		}
	}
	proxy := estest.Proxy(t)
	b := openVia(t, proxy.URL, prefix, "b", 3*time.Second)
	// From now on b's rounds write their leases but never hear the node's
	// answer, while a gives the partitions over its share back.
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.LoseAnswer, Path: "/_bulk?refresh=true"})
	ctx := untilDeadline(t)
	held := 0
	// Checked again at each of b's requests: its rounds write the leases.
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool {
		held = 0
		for _, l := range leases(t, prefix) {
			if l.Holder == "b" {
				held++
			}
		}
		return held >= 4
	}); err != nil {
		t.Fatalf("b holds %d partitions in the node, want 4 (half of 8): %v", held, err)
	}
	// One more lost round: b adopts the leases that name it in a round
	// that fails.
	seen := proxy.Stats().Faulted
	if err := proxy.Await(ctx, func(s faultproxy.Stats) bool { return s.Faulted >= seen+2 }); err != nil {
		t.Fatal(err)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	a.Close()
	var got []string
	for {
		l, err := b.Next(ctx)
		if errors.Is(err, frontier.ErrDone) {
			break
		}
		if err != nil {
			slices.Sort(got)
			t.Fatalf("b leased %v and then %v; want each of the %d URLs", got, err, len(want))
		}
		got = append(got, l.Item().URL)
		done := make(chan error, 1)
		l.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200}, func(err error) { done <- err })
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("b leased %v, want each of %v once", got, want)
	}
}

// A holder that cannot renew (a node that answers nothing) must stop its
// requests before another process may take its partitions: the lease's
// fence is done before the expiry the lease document shows, and Next
// hands out no URL of the partition until a renewal succeeds.
func TestALeasesFenceEndsBeforeItsPartitionMayBeTakenWhenRenewalsFail(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	proxy := estest.Proxy(t)
	a := openVia(t, proxy.URL, prefix, "a", 3*time.Second)
	a.BeginCycle()
	a.Add(item("http://a.test/1"), item("http://a.test/2"))
	ctx := untilDeadline(t)
	l, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	fenced, ok := l.(frontier.Fenced)
	if !ok {
		t.Fatalf("a lease of the shared store is a %T, not a frontier.Fenced", l)
	}
	if err := fenced.Fence().Err(); err != nil {
		t.Fatalf("the fence of a lease just handed out is done: %v", err)
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Status, Status: http.StatusServiceUnavailable})
	select {
	case <-fenced.Fence().Done():
	case <-ctx.Done():
		t.Fatal("the fence of a holder whose renewals all fail is not done")
	}
	doneAt := time.Now().UnixNano()
	for p, lease := range leases(t, prefix) {
		if lease.Holder == "a" && doneAt >= lease.Expires {
			t.Errorf("the fence was done %v after partition %d's lease expired: another process could fetch from its hosts meanwhile",
				time.Duration(doneAt-lease.Expires), p)
		}
	}
	next := make(chan frontier.Lease, 1)
	nctx, cancel := context.WithCancel(ctx)
	go func() {
		l, _ := a.Next(nctx)
		next <- l
	}()
	l.Release()
	// Renewals work again: the released URL is handed out again, with a
	// fence that is not done.
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	var again frontier.Lease
	select {
	case again = <-next:
	case <-ctx.Done():
	}
	cancel()
	if again == nil {
		t.Fatal("no URL was handed out once renewals succeeded again")
	}
	if err := again.(frontier.Fenced).Fence().Err(); err != nil {
		t.Errorf("a lease handed out after a successful renewal has a done fence: %v", err)
	}
}

// A process over its share gives a partition back once its requests there
// have ended and the document writes it made there are acknowledged: the
// next holder lists a write still pending as one to resume, and would
// fetch the page again to write it.
func TestAPartitionIsGivenBackOnlyOnceItsDocumentWritesAreAcknowledged(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	a := open(t, prefix, "a", 3*time.Second)
	host, part := writePendingWhereGivenBack(t, a)
	ctx := untilDeadline(t)
	// Each condition below is checked again at each of b's requests: the
	// rounds of both processes come at the same pace.
	proxy := estest.Proxy(t)
	b := openVia(t, proxy.URL, prefix, "b", 3*time.Second)
	// b gets the three other partitions a gives back...
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool { return count(b.Cluster().Holders, "b") >= 3 }); err != nil {
		t.Fatalf("b holds %v, want the three partitions of a's highest four without a write pending", b.Cluster().Holders)
	}
	// ...and not the one with the unacknowledged write, round after round.
	before := leases(t, prefix)[part].Expires
	var holder string
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool {
		l := leases(t, prefix)[part]
		holder = l.Holder
		return l.Expires != before || holder != "a"
	}); err != nil || holder != "a" {
		t.Fatalf("partition %d went to %q with a's write there unacknowledged (%v)", part, holder, err)
	}
	if _, err := a.Acknowledge([]frontier.Ack{{URL: host + "/"}}); err != nil {
		t.Fatal(err)
	}
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool { return leases(t, prefix)[part].Holder == "b" }); err != nil {
		t.Fatalf("partition %d is still %q's once its write was acknowledged", part, leases(t, prefix)[part].Holder)
	}
}

// An acknowledgement the node could not record (an outage of the state
// node) leaves the write pending in the store, for whoever holds the
// partition next, but does not keep the partition from being given back:
// a process over its share that kept it would leave its hosts unfetched,
// and the cycle unfinished, until its next start.
func TestAPartitionIsGivenBackOnceAnAcknowledgementFailedOnTheNode(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	proxy := estest.Proxy(t)
	// What a says of its partitions: one it gives back is released, not
	// lost when its lease expires under a slow round.
	said := &crawltest.LockedBuffer{}
	a := openWith(t, proxy.URL, esfrontier.Options{Prefix: prefix, Node: "a", Partitions: 8, LeaseTTL: 3 * time.Second,
		Log:    slog.New(slog.NewTextHandler(said, nil)),
		Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1} }})
	host, part := writePendingWhereGivenBack(t, a)
	ctx := untilDeadline(t)
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Refuse})
	if _, err := a.Acknowledge([]frontier.Ack{{URL: host + "/"}}); err == nil {
		t.Fatal("an acknowledgement was recorded with the node refusing connections")
	}
	estest.SetFault(t, proxy, faultproxy.Fault{Mode: faultproxy.Pass})
	// Both processes reach the node through the proxy: each condition is
	// checked again at each of their requests.
	b := openVia(t, proxy.URL, prefix, "b", 3*time.Second)
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool { return gaveBack(said.String(), part) }); err != nil {
		t.Fatalf("a never gave partition %d back, its write's acknowledgement lost in the outage; a said:\n%s", part, said)
	}
	if err := proxy.Await(ctx, func(faultproxy.Stats) bool { return b.Cluster().Holders[part] == "b" }); err != nil {
		t.Fatalf("b never took partition %d, which a gave back", part)
	}
	pending, err := b.Pending()
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].URL != host+"/" {
		t.Errorf("pending writes %v, want the one whose acknowledgement was lost", pending)
	}
}

// A busy node may put off the URL index's refresh for longer than a
// process keeps its stored outcomes out of its reads by time (5 s): a
// read then still shows a fetched URL Waiting. Its version, older than
// the outcome's, tells it is stale, and the URL is not leased again.
func TestAFetchedURLIsNotLeasedAgainFromAReadOlderThanItsOutcome(t *testing.T) {
	t.Parallel()
	prefix := estest.Index(t)
	// The process's clock is moved past the window instead of waiting it
	// out; its leases last long enough that moving it expires none.
	clock := fakeclock.New(time.Now())
	a := openWith(t, estest.URL(t), esfrontier.Options{Prefix: prefix, Node: "a", Partitions: 8, LeaseTTL: time.Hour, Now: clock.Now,
		Policy: func(string) frontier.HostPolicy { return frontier.HostPolicy{MaxParallel: 1} }})
	a.BeginCycle()
	a.Add(item("http://a.test/1"), item("http://a.test/2"))
	ctx := untilDeadline(t)
	first, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// From now on nothing written is searchable unless a refresh is asked.
	es := estest.Client(t)
	res, err := es.Indices.PutSettings(strings.NewReader(`{"index": {"refresh_interval": "-1"}}`), es.Indices.PutSettings.WithIndex(prefix+"-urls"))
	if err != nil || res.IsError() {
		t.Fatalf("turning the refresh off: %v %v", err, res)
	}
	res.Body.Close()
	done := make(chan error, 1)
	first.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// Past the time-based window, reads still show it Waiting.
	clock.Advance(8 * time.Second)
	next, err := a.Next(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if next.Item().URL == first.Item().URL {
		t.Errorf("%s was leased again from a read older than its outcome", first.Item().URL)
	}
	next.Release()
}

// writePendingWhereGivenBack fetches a page of a host in one of the
// partitions a gives back when a second process joins (its highest four
// of eight), its document write stored pending and not yet acknowledged.
func writePendingWhereGivenBack(t *testing.T, a *esfrontier.Store) (host string, part int) {
	t.Helper()
	for i := 0; host == ""; i++ {
		if h := fmt.Sprintf("http://h%d.test", i); a.Partition(h) >= 4 {
			host = h
		}
	}
	a.BeginCycle()
	a.Add(item(host + "/"))
	l, err := a.Next(untilDeadline(t))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	l.CompleteAsync(frontier.Outcome{State: frontier.Fetched, Status: 200, Hash: "h", Pending: frontier.PendingIndex, DocID: "d"}, func(err error) { done <- err })
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	return host, a.Partition(host)
}

// gaveBack says whether a store's log says it gave part back.
func gaveBack(log string, part int) bool {
	for _, m := range gaveBackRE.FindAllStringSubmatch(log, -1) {
		if slices.Contains(strings.Fields(m[1]), strconv.Itoa(part)) {
			return true
		}
	}
	return false
}

var gaveBackRE = regexp.MustCompile(`gave_back="?\[([0-9 ]*)\]`)
