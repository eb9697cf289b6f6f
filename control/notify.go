package control

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
)

// The headers of a notification (docs/api.md, Notifications).
const (
	HeaderSignature = "X-Crawlspace-Signature"
	HeaderTimestamp = "X-Crawlspace-Timestamp"
	HeaderDelivery  = "X-Crawlspace-Delivery"
	HeaderEvent     = "X-Crawlspace-Event"
	// EventCycleFinished is the event of a cycle's report.
	EventCycleFinished = "cycle_finished"
)

// Sign is the value of the signature header of a notification: the
// HMAC-SHA256 under secret of the timestamp header's value, a full stop and
// the body, in hex after "sha256=". The timestamp is signed so that a
// recorded notification cannot be sent again later as a new one.
func Sign(secret []byte, timestamp string, body []byte) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(timestamp))
	m.Write([]byte{'.'})
	m.Write(body)
	return "sha256=" + hex.EncodeToString(m.Sum(nil))
}

// Verify says whether signature is body's under secret with timestamp, and
// the timestamp within maxAge of now: what a receiver checks.
func Verify(secret []byte, timestamp, signature string, body []byte, now time.Time, maxAge time.Duration) bool {
	sec, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return false
	}
	if d := now.Sub(time.Unix(sec, 0)); d > maxAge || d < -maxAge {
		return false
	}
	return hmac.Equal([]byte(Sign(secret, timestamp, body)), []byte(signature))
}

// Notification is the body of a notification.
type Notification struct {
	Event    string           `json:"event"`
	Delivery string           `json:"delivery"`
	Version  string           `json:"version"`
	Report   *provider.Report `json:"report"`
}

// Notifier sends every cycle's report to the configured receivers, each
// from a queue of its own, so a slow or failing receiver never holds the
// crawl nor another receiver.
type Notifier struct {
	targets []*target
	version string
	log     *slog.Logger
	// mu orders CycleDone and Close: no report is queued once closed.
	mu     sync.Mutex
	closed bool
}

type target struct {
	cfg    config.Notify
	name   string // the URL without its query, for the log
	client *http.Client
	queue  chan Notification
	timing timing
	now    func() time.Time
	log    *slog.Logger
	stop   context.Context
	cancel context.CancelFunc
	done   sync.WaitGroup
}

// timing is how long a notification waits before each attempt after the
// first: first, twice as long each time up to most.
type timing struct{ first, most time.Duration }

var defaultTiming = timing{first: time.Second, most: time.Minute}

// NewNotifier starts one sender per receiver. now is the crawler's clock,
// which dates each attempt's signature; time.Now when nil.
func NewNotifier(list []config.Notify, version string, now func() time.Time, log *slog.Logger) (*Notifier, error) {
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	n := &Notifier{version: version, log: log}
	for i := range list {
		t, err := newTarget(list[i], now, log)
		if err != nil {
			n.Close(context.Background())
			return nil, err
		}
		n.targets = append(n.targets, t)
	}
	return n, nil
}

func newTarget(cfg config.Notify, now func() time.Time, log *slog.Logger) (*target, error) {
	roots, err := cfg.RootCAs()
	if err != nil {
		return nil, err
	}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.TLSClientConfig = &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}
	name := cfg.URL
	if u, err := url.Parse(cfg.URL); err == nil {
		u.RawQuery, u.Fragment = "", ""
		name = u.String()
	}
	ctx, cancel := context.WithCancel(context.Background())
	t := &target{cfg: cfg, name: name, queue: make(chan Notification, cfg.Queue), timing: defaultTiming, now: now, log: log,
		stop: ctx, cancel: cancel,
		// A receiver redirecting elsewhere would take the signed report
		// where the configuration never said.
		client: &http.Client{Transport: tr, Timeout: cfg.Timeout.D(), CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}}
	t.done.Go(t.run)
	return t, nil
}

// CycleDone queues the report of a finished cycle for every receiver. It
// never waits: a receiver whose queue is full loses this report, with a
// warning.
func (n *Notifier) CycleDone(r *provider.Report) {
	if n == nil || r == nil || len(n.targets) == 0 {
		return
	}
	note := Notification{Event: EventCycleFinished, Delivery: deliveryID(), Version: n.version, Report: r.Clone()}
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.closed {
		return
	}
	for _, t := range n.targets {
		select {
		case t.queue <- note:
		default:
			n.log.Warn("notification dropped: the receiver's queue is full", "url", t.name, "queue", cap(t.queue), "delivery", note.Delivery)
		}
	}
}

// Close stops the senders: the notifications queued are sent within ctx,
// and those left when it ends are dropped, counted in one warning. Later
// calls do nothing.
func (n *Notifier) Close(ctx context.Context) {
	if n == nil {
		return
	}
	n.mu.Lock()
	if n.closed {
		n.mu.Unlock()
		return
	}
	n.closed = true
	for _, t := range n.targets {
		close(t.queue)
	}
	n.mu.Unlock()
	finished := make(chan struct{})
	go func() {
		for _, t := range n.targets {
			t.done.Wait()
		}
		close(finished)
	}()
	select {
	case <-finished:
	case <-ctx.Done():
		for _, t := range n.targets {
			t.cancel()
		}
		<-finished
	}
}

func deliveryID() string {
	var b [12]byte
	rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// run sends the queued notifications one after the other until the queue
// is closed; once stopped, what is left is dropped.
func (t *target) run() {
	dropped := 0
	for note := range t.queue {
		if t.stop.Err() != nil {
			dropped++
			continue
		}
		t.deliver(note)
	}
	if dropped > 0 {
		t.log.Warn("notifications not sent: the service stopped", "url", t.name, "count", dropped)
	}
}

// deliver tries a notification up to the receiver's attempts, waiting
// longer after each failure: an answer 2xx delivers it; a 5xx, 408, 429 or
// a failed request is tried again; any other answer is the receiver's
// refusal, not tried again.
func (t *target) deliver(note Notification) {
	body, err := json.Marshal(note)
	if err != nil {
		t.log.Error("notification not sent: the report cannot be encoded", "url", t.name, "err", err)
		return
	}
	wait := t.timing.first
	var last string
	for attempt := 1; ; attempt++ {
		status, err := t.post(body, note.Delivery)
		switch {
		case err == nil && status/100 == 2:
			t.log.Debug("notification delivered", "url", t.name, "delivery", note.Delivery, "attempt", attempt, "status", status)
			return
		case err != nil:
			last = err.Error()
		default:
			last = "HTTP " + strconv.Itoa(status)
		}
		if err == nil && !retried(status) {
			t.log.Warn("notification refused by its receiver", "url", t.name, "delivery", note.Delivery, "status", status)
			return
		}
		if attempt >= t.cfg.Attempts {
			t.log.Warn("notification not delivered", "url", t.name, "delivery", note.Delivery, "attempts", attempt, "err", last)
			return
		}
		t.log.Debug("notification failed, tried again", "url", t.name, "delivery", note.Delivery, "attempt", attempt, "in", wait.String(), "err", last)
		select {
		case <-t.stop.Done():
			t.log.Warn("notification not delivered: the service stopped", "url", t.name, "delivery", note.Delivery, "attempts", attempt, "err", last)
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, t.timing.most)
	}
}

func retried(status int) bool {
	return status >= 500 || status == http.StatusRequestTimeout || status == http.StatusTooManyRequests
}

// post makes one attempt, signed at the time it is made.
func (t *target) post(body []byte, delivery string) (int, error) {
	req, err := http.NewRequestWithContext(t.stop, http.MethodPost, t.cfg.URL, bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	ts := strconv.FormatInt(t.now().Unix(), 10)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "crawlspace-notify")
	req.Header.Set(HeaderEvent, EventCycleFinished)
	req.Header.Set(HeaderDelivery, delivery)
	req.Header.Set(HeaderTimestamp, ts)
	req.Header.Set(HeaderSignature, Sign([]byte(t.cfg.Secret), ts, body))
	res, err := t.client.Do(req)
	if err != nil {
		var ue *url.Error
		if errors.As(err, &ue) {
			err = ue.Err // the URL is the log line's own
		}
		return 0, err
	}
	io.Copy(io.Discard, io.LimitReader(res.Body, 64<<10))
	res.Body.Close()
	return res.StatusCode, nil
}

// String names the receivers, for a log line.
func (n *Notifier) String() string {
	names := make([]string, len(n.targets))
	for i, t := range n.targets {
		names[i] = t.name
	}
	return fmt.Sprintf("[%s]", strings.Join(names, " "))
}
