package control_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/control"
	"github.com/crawlspace/crawlspace/internal/fakeclock"
	"github.com/crawlspace/crawlspace/provider"
)

const secret = "a-shared-secret-for-the-test"

// receiver is a loopback receiver of notifications answering each with
// the next of its statuses (the last one repeated), recording each.
type receiver struct {
	*httptest.Server
	mu       sync.Mutex
	statuses []int
	got      []received
	arrived  chan struct{}
	// began hears of each request as it arrives; hold, when not nil,
	// keeps each request waiting until it is closed.
	began chan struct{}
	hold  chan struct{}
}

type received struct {
	header http.Header
	body   []byte
	status int
}

func newReceiver(t *testing.T, statuses ...int) *receiver {
	r := &receiver{statuses: statuses, arrived: make(chan struct{}, 100), began: make(chan struct{}, 100)}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.began <- struct{}{}
		if r.hold != nil {
			<-r.hold
		}
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		status := r.statuses[min(len(r.got), len(r.statuses)-1)]
		r.got = append(r.got, received{req.Header.Clone(), body, status})
		r.mu.Unlock()
		w.WriteHeader(status)
		r.arrived <- struct{}{}
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) requests() []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]received(nil), r.got...)
}

// await waits for n more requests.
func (r *receiver) await(n int) {
	for range n {
		<-r.arrived
	}
}

func notifier(t *testing.T, log *lockedBuffer, targets ...config.Notify) *control.Notifier {
	t.Helper()
	for i := range targets {
		targets[i].Secret = secret
		targets[i].Timeout = config.Duration(10 * time.Second)
		if targets[i].Attempts == 0 {
			targets[i].Attempts = 5
		}
		if targets[i].Queue == 0 {
			targets[i].Queue = 10
		}
	}
	n, err := control.NewNotifier(targets, "v-test", nil, slog.New(slog.NewJSONHandler(log, &slog.HandlerOptions{Level: slog.LevelDebug})))
	if err != nil {
		t.Fatal(err)
	}
	control.SetRetry(n, time.Millisecond, 4*time.Millisecond)
	t.Cleanup(func() { n.Close(context.Background()) })
	return n
}

func report() *provider.Report {
	r := provider.NewReport("test-index")
	r.Finish(nil)
	return r
}

// A receiver that answers 500 gets the notification again, signed anew;
// both signatures verify with the secret, the timestamp signed with the
// body; a body or timestamp changed does not verify.
func TestANotificationIsSignedVerifiableAndRetriedAfterA500(t *testing.T) {
	rec := newReceiver(t, 500, 200)
	var log lockedBuffer
	n := notifier(t, &log, config.Notify{URL: rec.URL + "/hook?key=in-the-query"})
	n.CycleDone(report())
	rec.await(2)
	got := rec.requests()
	for i, r := range got {
		ts, sig := r.header.Get(control.HeaderTimestamp), r.header.Get(control.HeaderSignature)
		if !strings.HasPrefix(sig, "sha256=") || !control.Verify([]byte(secret), ts, sig, r.body, time.Now(), 5*time.Minute) {
			t.Errorf("attempt %d: the signature %q over timestamp %q does not verify", i+1, sig, ts)
		}
		if control.Verify([]byte(secret), ts, sig, append(r.body, ' '), time.Now(), 5*time.Minute) ||
			control.Verify([]byte("another secret"), ts, sig, r.body, time.Now(), 5*time.Minute) ||
			control.Verify([]byte(secret), "1", sig, r.body, time.Now(), 5*time.Minute) {
			t.Errorf("attempt %d: a changed body, secret or timestamp verifies", i+1)
		}
		var note control.Notification
		if err := json.Unmarshal(r.body, &note); err != nil || note.Event != "cycle_finished" || note.Report == nil || note.Report.Sink != "test-index" || note.Version != "v-test" {
			t.Errorf("attempt %d: body %s (%v)", i+1, r.body, err)
		}
		if r.header.Get(control.HeaderEvent) != "cycle_finished" || r.header.Get(control.HeaderDelivery) != got[0].header.Get(control.HeaderDelivery) || r.header.Get("Content-Type") != "application/json" {
			t.Errorf("attempt %d: headers %v", i+1, r.header)
		}
	}
	if len(got) != 2 || got[0].status != 500 || got[1].status != 200 {
		t.Errorf("requests %d, want the 500 and the 200", len(got))
	}
	if strings.Contains(log.String(), "in-the-query") {
		t.Errorf("the log holds the receiver's query: %s", log.String())
	}
}

// Each attempt is dated, and signed, by the crawler's clock, not the
// machine's.
func TestANotificationIsDatedByTheCrawlersClock(t *testing.T) {
	rec := newReceiver(t, 200)
	clock := fakeclock.New(time.Date(2001, 2, 3, 4, 5, 6, 0, time.UTC))
	n, err := control.NewNotifier([]config.Notify{{URL: rec.URL, Secret: secret, Timeout: config.Duration(10 * time.Second), Attempts: 1, Queue: 1}},
		"v-test", clock.Now, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { n.Close(context.Background()) })
	n.CycleDone(report())
	rec.await(1)
	r := rec.requests()[0]
	ts, sig := r.header.Get(control.HeaderTimestamp), r.header.Get(control.HeaderSignature)
	if ts != "981173106" || !control.Verify([]byte(secret), ts, sig, r.body, clock.Now(), time.Minute) {
		t.Errorf("timestamp %q signature %q, want the fake clock's 981173106, signed", ts, sig)
	}
}

// A receiver that refuses (a 4xx) is not asked again; one that fails
// every attempt is given up after the configured attempts, warned.
func TestARefusedNotificationIsNotRetriedAndAFailingOneStopsAtItsAttempts(t *testing.T) {
	refusing, failing := newReceiver(t, 403), newReceiver(t, 503)
	var log lockedBuffer
	n := notifier(t, &log, config.Notify{URL: refusing.URL}, config.Notify{URL: failing.URL, Attempts: 3})
	n.CycleDone(report())
	refusing.await(1)
	failing.await(3)
	n.Close(context.Background())
	if got := len(refusing.requests()); got != 1 {
		t.Errorf("the refusing receiver was asked %d times, want once", got)
	}
	if got := len(failing.requests()); got != 3 {
		t.Errorf("the failing receiver was asked %d times, want its 3 attempts", got)
	}
	for _, want := range []string{`"msg":"notification refused by its receiver"`, `"msg":"notification not delivered"`, `"attempts":3`} {
		if !strings.Contains(log.String(), want) {
			t.Errorf("the log lacks %s:\n%s", want, log.String())
		}
	}
}

// A receiver that does not answer holds its own queue only: reports past
// the queue are dropped with a warning, and CycleDone never waits.
func TestAFullQueueDropsAReportWithAWarningAndNeverWaits(t *testing.T) {
	slow := newReceiver(t, 200)
	slow.hold = make(chan struct{})
	quick := newReceiver(t, 200)
	var log lockedBuffer
	n := notifier(t, &log, config.Notify{URL: slow.URL, Queue: 1}, config.Notify{URL: quick.URL})
	n.CycleDone(report())
	<-slow.began // the first report is being sent, its queue empty
	for range 3 {
		n.CycleDone(report()) // would hang the test if it waited for the slow receiver
	}
	quick.await(4)
	close(slow.hold)
	slow.await(2)
	// One being sent and one queued: the other two were dropped.
	if got := strings.Count(log.String(), `"msg":"notification dropped: the receiver's queue is full"`); got != 2 {
		t.Errorf("%d drops warned, want 2:\n%s", got, log.String())
	}
}
