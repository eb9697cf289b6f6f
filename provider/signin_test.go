package provider_test

import (
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/provider"
)

// bodyLog is a server's log of the request bodies it received, to tell
// what reached it: nothing of a sign-in may reach a host off auth.hosts.
type bodyLog struct {
	mu     sync.Mutex
	bodies []string
}

// keep wraps a route so that every body it receives is logged.
func (l *bodyLog) keep(h http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		l.mu.Lock()
		l.bodies = append(l.bodies, r.Method+" "+r.URL.Path+" "+string(b))
		l.mu.Unlock()
		h(w, r)
	}
}

func (l *bodyLog) holding(s string) []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, b := range l.bodies {
		if strings.Contains(b, s) {
			out = append(out, b)
		}
	}
	return out
}

// credentialHeaders lists the headers of requests to site that carry a
// credential or the source's own header: none may reach a host off
// auth.hosts.
func credentialHeaders(site *testSite, names ...string) []string {
	site.mu.Lock()
	defer site.mu.Unlock()
	var out []string
	for uri, hs := range site.heads {
		for _, h := range hs {
			for _, name := range append([]string{"Authorization", "Cookie"}, names...) {
				if v := h.Get(name); v != "" {
					out = append(out, fmt.Sprintf("%s got %s: %s", uri, name, v))
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// reachedNothing fails the test if a request to other, a host off
// auth.hosts, was a post or carried the password, a credential or the
// source's own header.
func reachedNothing(t *testing.T, other *testSite, got *bodyLog) {
	t.Helper()
	if h := credentialHeaders(other, "X-Team-Key"); len(h) != 0 {
		t.Errorf("the host off auth.hosts received credentials: %q", h)
	}
	if b := got.holding("pa55-word"); len(b) != 0 {
		t.Errorf("the host off auth.hosts received the password: %q", b)
	}
	if b := got.holding("POST "); len(b) != 0 {
		t.Errorf("the host off auth.hosts was posted to: %q", b)
	}
}

// A login form's host that answers the post with a 307 or 308 to another
// host asks for the form, password and all, to be posted there. The
// sign-in ends instead, the step named, and the other host gets nothing.
func TestAFormSignInRedirectedWithItsBodyOffAuthHostsSendsThePasswordNowhere(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		status int
		ip     string
	}{
		{"307 to another address", http.StatusTemporaryRedirect, "127.0.0.2"},
		{"308 to another port", http.StatusPermanentRedirect, "127.0.0.1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := newLoginSite(t, "redirect")
			other := newSiteAt(t, tc.ip)
			var got bodyLog
			other.handle("/", got.keep(htmlPage("elsewhere", "")))
			site.handle("/session", func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/session", tc.status)
			})
			cfg, out := testConfig(t, "", "max_temporary_errors: 1\n"+fmt.Sprintf(formAuth, site.URL), site.URL+"/")

			_, report := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})

			reachedNothing(t, other, &got)
			if ex := exampleFor(report, "auth_failed"); !strings.Contains(ex, "form authentication failed: login form posts elsewhere: ") ||
				!strings.Contains(ex, other.URL) || strings.Contains(ex, "pa55-word") {
				t.Errorf("the failure reads %q, want the step, the host and no password", ex)
			}
			if got := indexedURLs(t, out); len(got) != 0 {
				t.Errorf("indexed %v", got)
			}
		})
	}
	t.Run("307 within auth.hosts", func(t *testing.T) {
		t.Parallel()
		site := newLoginSite(t, "redirect")
		site.pages = 1000
		site.mu.Lock()
		post := site.routes["/session"]
		site.mu.Unlock()
		site.handle("/session", func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, "/session/checked", http.StatusTemporaryRedirect)
		})
		site.handle("/session/checked", post)
		cfg, out := testConfig(t, "", fmt.Sprintf(formAuth, site.URL), site.URL+"/")
		_, report := crawlKeep(t, cfg)
		if signIns, refusals := site.counts(); signIns != 1 || refusals != 0 {
			t.Errorf("%d sign-ins, %d refusals, want the form posted on once: %v", signIns, refusals, report.Total.Reasons)
		}
		if got := indexedURLs(t, out); len(got) != 5 {
			t.Errorf("indexed %v", got)
		}
	})
}

// The steps of a sign-in that send no body may end on another host: what
// goes there is a GET without the session's cookies, and no password.
func TestTheHopsOfASignInToAnotherHostCarryNoCredential(t *testing.T) {
	t.Parallel()
	t.Run("303 after the post", func(t *testing.T) {
		t.Parallel()
		site := newLoginSite(t, "redirect")
		other := newSiteAt(t, "127.0.0.2")
		var got bodyLog
		other.handle("/", got.keep(htmlPage("welcome", "")))
		site.mu.Lock()
		post := site.routes["/session"]
		site.mu.Unlock()
		// The sign-in succeeds, sets its cookie and sends the browser on
		// to a portal on another host.
		site.handle("/session", func(w http.ResponseWriter, r *http.Request) {
			rec := httptest.NewRecorder()
			post(rec, r)
			for k, v := range rec.Header() {
				w.Header()[k] = v
			}
			if rec.Code == http.StatusSeeOther {
				w.Header().Set("Location", other.URL+"/welcome")
			}
			w.WriteHeader(rec.Code)
			w.Write(rec.Body.Bytes())
		})
		cfg, out := testConfig(t, "", "headers: {X-Team-Key: team-k3y}\n"+fmt.Sprintf(formAuth, site.URL), site.URL+"/")
		_, report := crawlKeep(t, cfg)
		if other.hit("/welcome") == 0 {
			t.Fatalf("the sign-in did not go on to the other host; reasons %v", report.Total.Reasons)
		}
		reachedNothing(t, other, &got)
		if got := indexedURLs(t, out); len(got) != 5 {
			t.Errorf("indexed %v; reasons %v", got, report.Total.Reasons)
		}
	})
	t.Run("the login page on another host", func(t *testing.T) {
		t.Parallel()
		site := newLoginSite(t, "redirect")
		other := newSiteAt(t, "127.0.0.2")
		var got bodyLog
		other.handle("/", got.keep(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body>"+loginForm+"</body></html>", site.token())
		}))
		site.handle("/login", func(w http.ResponseWriter, r *http.Request) {
			http.SetCookie(w, &http.Cookie{Name: "state", Value: "st4te", Path: "/"})
			http.Redirect(w, r, other.URL+"/login", http.StatusTemporaryRedirect)
		})
		cfg, _ := testConfig(t, "", "max_temporary_errors: 1\nheaders: {X-Team-Key: team-k3y}\n"+fmt.Sprintf(formAuth, site.URL), site.URL+"/")
		_, report := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
		if other.hit("/login") == 0 {
			t.Fatalf("the login page's redirect was not followed; reasons %v", report.Total.Reasons)
		}
		reachedNothing(t, other, &got)
		if ex := exampleFor(report, "auth_failed"); !strings.Contains(ex, ": login form posts elsewhere: ") {
			t.Errorf("the failure reads %q: the form of a page off auth.hosts posts there", ex)
		}
	})
}

// Every hop of a redirect is judged on its own URL: whatever net/http
// copies from the first request onto the next (it keeps Authorization
// for the same host name on another port, and copies the request's other
// headers everywhere), a hop off auth.hosts gets no credential and none
// of the source's own headers, also after a hop that stayed there.
func TestNoCredentialOrOwnHeaderLeavesOnAnyHopOfARedirect(t *testing.T) {
	t.Parallel()
	const pass = "s3cret-pass"
	site := newSite(t)
	port := newSite(t)                // the same address, another port
	addr := newSiteAt(t, "127.0.0.2") // another address
	behind(site, func(r *http.Request) bool {
		_, p, ok := r.BasicAuth()
		return ok && p == pass && r.Header.Get("X-Team-Key") == "team-k3y"
	}, func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) })
	site.html("/", "home", links("/a", "/away"))
	site.html("/a", "a", "")
	site.redirect("/away", addr.URL+"/landing.html")
	addr.html("/landing.html", "landing", "")
	// robots.txt: to the other port, then within it.
	site.redirect("/robots.txt", port.URL+"/hop/robots.txt")
	port.redirect("/hop/robots.txt", port.URL+"/robots.txt")
	port.text("/robots.txt", "text/plain", "User-agent: *\nDisallow: /private\n")
	// A sitemap: to the other address with its body's status codes, then within it.
	site.handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, addr.URL+"/hop/sitemap.xml", http.StatusTemporaryRedirect)
	})
	addr.handle("/hop/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, addr.URL+"/sitemap.xml", http.StatusPermanentRedirect)
	})
	addr.text("/sitemap.xml", "application/xml", fmt.Sprintf(
		`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/listed.html</loc></url></urlset>`, addr.URL))
	addr.html("/listed.html", "listed", "")
	cfg, out := testConfig(t, "", fmt.Sprintf("stay_on_start_hosts: false\nsitemaps: [%q]\nheaders: {X-Team-Key: team-k3y}\nauth: {username: alice, password: %s}",
		site.URL+"/sitemap.xml", pass), site.URL+"/")

	_, report := crawlKeep(t, cfg)

	if port.hit("/robots.txt") == 0 || addr.hit("/sitemap.xml") == 0 || addr.hit("/landing.html") == 0 {
		t.Fatalf("the redirects were not followed: %v %v; reasons %v", port.requested(), addr.requested(), report.Total.Reasons)
	}
	want := sortedURLs(site.URL, "/", "/a")
	want = append(want, addr.URL+"/landing.html", addr.URL+"/listed.html")
	slices.Sort(want)
	if got := indexedURLs(t, out); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v; reasons %v", got, want, report.Total.Reasons)
	}
	for _, other := range []*testSite{port, addr} {
		if h := credentialHeaders(other, "X-Team-Key"); len(h) != 0 {
			t.Errorf("%s, off auth.hosts, received: %q", other.URL, h)
		}
	}
}

// A source whose password would go over plain http says so in the report
// and the log as the cycle starts, once, as turned-off TLS verification
// does; a digest source over http, which sends no reusable secret, does not.
func TestAPasswordOverPlainHTTPIsWarnedOncePerSourceInTheReportAndLog(t *testing.T) {
	t.Parallel()
	plain, digest := newSite(t), newSite(t)
	plain.html("/", "home", "")
	digest.html("/", "home", "")
	out := t.TempDir() + "/docs.ndjson"
	cfg := crawltest.Config(t, fmt.Sprintf(`output: {file: %q}
allow_private_networks: true
sources:
  - name: plain
    start_urls: [%q, %q]
    auth: {username: alice, password: s3cret-pass}
  - name: digest
    start_urls: [%q]
    auth: {method: digest, username: alice, password: s3cret-pass}
`, out, plain.URL+"/", plain.URL+"/a", digest.URL+"/"))
	var log syncBuffer
	c := crawltest.NewLogged(t, cfg, slog.New(slog.NewTextHandler(&log, nil)))

	report := again(t, c)

	at := cfg.Pos("sources[0].start_urls[0]")
	want := fmt.Sprintf("%s:%d:%d: sources[0].start_urls[0]: the basic auth password would go over plain http", cfg.File, at.Line, at.Column)
	var warned []string
	for _, w := range report.Warnings {
		if strings.Contains(w, "plain http") {
			warned = append(warned, w)
		}
	}
	if len(warned) != 1 || !strings.HasPrefix(warned[0], want) || !strings.Contains(warned[0], "to "+plain.URL+";") {
		t.Errorf("report warnings %q, want one starting %q and naming %s", warned, want, plain.URL)
	}
	var logged []string
	for line := range strings.SplitSeq(log.String(), "\n") {
		if strings.Contains(line, "plain http") {
			logged = append(logged, line)
		}
	}
	if len(logged) != 1 || !strings.Contains(logged[0], "level=WARN") || !strings.Contains(logged[0], want) {
		t.Errorf("the log warns %q, want once at WARN: %q", logged, want)
	}
	if strings.Contains(log.String(), "s3cret-pass") || strings.Contains(strings.Join(report.Warnings, "\n"), "s3cret-pass") {
		t.Error("the warning holds the password")
	}
}
