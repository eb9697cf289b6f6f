package provider_test

import (
	"bufio"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/hostile"
	"github.com/crawlspace/crawlspace/provider"
)

// logBuffer keeps the crawler's JSON log lines.
type logBuffer struct{ crawltest.LockedBuffer }

// lines are the log lines with msg about u, decoded.
func (l *logBuffer) lines(t *testing.T, msg, u string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(l.String()))
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if m["msg"] == msg && m["url"] == u {
			out = append(out, m)
		}
	}
	return out
}

// crawlLogged runs one cycle with the crawler logging JSON at info level.
func crawlLogged(t *testing.T, cfg *config.Config, tm provider.Timing) (*provider.Crawler, *provider.Report, *logBuffer) {
	t.Helper()
	logs := &logBuffer{}
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewJSONHandler(logs, nil)))
	provider.SetTiming(c, tm)
	return c, again(t, c), logs
}

// wantCause checks that the cause of u's failure reaches the log line
// "fetch failed", the report's example and every retry and the error in
// u's history, and that the log gives the attempts the report counts, at
// least minAttempts (a host's robots.txt failures count for each of its
// URLs, so a URL may end with more than its own).
func wantCause(t *testing.T, c *provider.Crawler, report *provider.Report, logs *logBuffer, u, reason, cause string, minAttempts int) {
	t.Helper()
	has := func(s string) bool { return strings.Contains(strings.ToLower(s), strings.ToLower(cause)) }
	wantState(t, c, u, frontier.Error, reason)
	attempts := -1
	for _, e := range report.Examples {
		if e.URL == u && e.Reason == reason {
			t.Logf("%s %s: %s", u, reason, e.Detail)
			_, count, _ := strings.Cut(e.Detail, "temporary errors in a row: ")
			attempts, _ = strconv.Atoi(count)
			if !has(e.Detail) || attempts < minAttempts {
				t.Errorf("%s: report detail %q does not give the cause %q and at least %d attempts", u, e.Detail, cause, minAttempts)
			}
		}
	}
	if attempts < 0 {
		t.Errorf("%s: no report example for %s", u, reason)
	}
	lines := logs.lines(t, "fetch failed", u)
	if len(lines) != 1 {
		t.Fatalf("%s: %d log lines \"fetch failed\", want 1", u, len(lines))
	}
	if d, _ := lines[0]["detail"].(string); !has(d) {
		t.Errorf("%s: log line %v does not give the cause %q", u, lines[0], cause)
	}
	if n, _ := lines[0]["attempts"].(float64); int(n) != attempts {
		t.Errorf("%s: log says %v attempts, the report %d", u, lines[0]["attempts"], attempts)
	}
	evs, err := c.Frontier().History(u)
	if err != nil {
		t.Fatal(err)
	}
	failures := 0
	for _, ev := range evs {
		if ev.Kind == frontier.EventRetry || ev.Kind == frontier.EventError {
			failures++
			if !has(ev.Detail) {
				t.Errorf("%s: history %s event detail %q does not give the cause %q", u, ev.Kind, ev.Detail, cause)
			}
		}
	}
	if failures == 0 || evs[len(evs)-1].Kind != frontier.EventError {
		t.Errorf("%s: history %v does not end in the error", u, evs)
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// closedPort is the URL of a loopback port nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	u := "http://" + l.Addr().String()
	l.Close()
	return u
}

// resetConnection answers a request by resetting its connection.
func resetConnection(w http.ResponseWriter, r *http.Request) {
	conn, _, err := w.(http.Hijacker).Hijack()
	if err != nil {
		return
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func TestTemporaryPageErrorsGiveTheirCauseToTheLogTheReportAndTheHistory(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	drip := &hostile.Drip{Head: "<html><title>drip</title>", Every: 20 * time.Millisecond}
	site.handle("/drip.html", drip.ServeHTTP)
	site.handle("/reset.html", resetConnection)
	site.handle("/busy.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusServiceUnavailable)
	})
	refused := closedPort(t) + "/"
	site.html("/", "home", links("/drip.html", "/reset.html", "/busy.html"))
	cfg, _ := testConfig(t, "fetch: {timeout: 1s}", "max_temporary_errors: 2\nrobots: {obey: false}", site.URL+"/", refused)

	c, report, logs := crawlLogged(t, cfg, provider.Timing{RetryBase: 10 * time.Millisecond})

	wantCause(t, c, report, logs, site.URL+"/drip.html", "timeout", "timeout", 2)
	wantCause(t, c, report, logs, site.URL+"/reset.html", "connection_reset", "connection reset", 2)
	wantCause(t, c, report, logs, site.URL+"/busy.html", "http_503", "Retry-After", 2)
	wantCause(t, c, report, logs, refused, "connection_refused", "connection refused", 2)
}

func TestUnavailableRobotsTxtGivesItsCauseToTheLogTheReportAndTheHistory(t *testing.T) {
	t.Parallel()
	failing, dripping := newSite(t), newSite(t)
	failing.status("/robots.txt", http.StatusInternalServerError)
	drip := &hostile.Drip{Head: "User-agent: *\n", Every: 20 * time.Millisecond, ContentType: "text/plain"}
	dripping.handle("/robots.txt", drip.ServeHTTP)
	for _, s := range []*testSite{failing, dripping} {
		s.html("/", "home", "")
	}
	refused := closedPort(t) + "/"
	// The failing host's URLs share its failures: some end after their
	// first turn, with the host's count of attempts. Five URLs in all fail
	// with robots_unavailable, as many as the report keeps examples of.
	starts := []string{dripping.URL + "/", refused}
	for i := range 3 {
		starts = append(starts, failing.URL+"/p"+itoa(i)+".html")
	}
	cfg, _ := testConfig(t, "fetch: {timeout: 1s}", "max_temporary_errors: 2", starts...)

	c, report, logs := crawlLogged(t, cfg, provider.Timing{RobotsRetry: 20 * time.Millisecond})

	for _, u := range starts[2:] {
		wantCause(t, c, report, logs, u, "robots_unavailable", "HTTP 500", 2)
	}
	wantCause(t, c, report, logs, dripping.URL+"/", "robots_unavailable", "timeout", 2)
	wantCause(t, c, report, logs, refused, "robots_unavailable", "connection refused", 2)
}
