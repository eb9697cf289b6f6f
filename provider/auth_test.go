package provider_test

import (
	"crypto/md5"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/provider"
)

// digestServer answers as an RFC 7616 server (MD5, qop=auth) would: a 401
// with a challenge, then the page to a request whose response the password
// computes.
type digestServer struct {
	user, pass, realm string
	mu                sync.Mutex
	nonces            map[string]bool
	challenges        int
}

var digestParam = regexp.MustCompile(`(\w+)=(?:"([^"]*)"|([^,\s]*))`)

func (d *digestServer) ok(r *http.Request) bool {
	h := r.Header.Get("Authorization")
	if !strings.HasPrefix(h, "Digest ") {
		return false
	}
	p := map[string]string{}
	for _, m := range digestParam.FindAllStringSubmatch(h, -1) {
		p[m[1]] = m[2] + m[3]
	}
	d.mu.Lock()
	known := d.nonces[p["nonce"]]
	d.mu.Unlock()
	sum := func(s string) string { b := md5.Sum([]byte(s)); return hex.EncodeToString(b[:]) }
	ha1 := sum(d.user + ":" + d.realm + ":" + d.pass)
	ha2 := sum(r.Method + ":" + r.URL.RequestURI())
	want := sum(ha1 + ":" + p["nonce"] + ":" + p["nc"] + ":" + p["cnonce"] + ":" + p["qop"] + ":" + ha2)
	return known && p["username"] == d.user && p["uri"] == r.URL.RequestURI() && p["response"] == want
}

func (d *digestServer) challenge(w http.ResponseWriter) {
	var b [8]byte
	rand.Read(b[:])
	nonce := hex.EncodeToString(b[:])
	d.mu.Lock()
	if d.nonces == nil {
		d.nonces = map[string]bool{}
	}
	d.nonces[nonce] = true
	d.challenges++
	d.mu.Unlock()
	w.Header().Add("WWW-Authenticate", `Basic realm="legacy"`)
	w.Header().Add("WWW-Authenticate", fmt.Sprintf(`Digest realm=%q, qop="auth,auth-int", nonce=%q, opaque="0paque", algorithm=MD5`, d.realm, nonce))
	w.WriteHeader(http.StatusUnauthorized)
}

// behind puts every route of site behind check, robots.txt aside.
func behind(site *testSite, check func(r *http.Request) bool, refuse func(w http.ResponseWriter)) {
	inner := site.Config.Handler
	site.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/robots.txt" && !check(r) {
			site.ServeHTTP(&discard{w: w}, r) // counted like any request
			refuse(w)
			return
		}
		inner.ServeHTTP(w, r)
	})
}

// discard counts a refused request without answering it.
type discard struct{ w http.ResponseWriter }

func (d *discard) Header() http.Header         { return http.Header{} }
func (d *discard) Write(b []byte) (int, error) { return len(b), nil }
func (d *discard) WriteHeader(int)             {}

func TestEveryMethodsCredentialsGoToItsHostsOnlyNotAfterARedirectEither(t *testing.T) {
	t.Parallel()
	const pass = "s3cret-pass"
	const token = "t0ken-value"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+pass))
	for _, tc := range []struct {
		method, auth string
		check        func(d *digestServer) func(*http.Request) bool
		// leaked lists the request headers that would carry the credentials.
		leaked []string
	}{
		{"basic", "auth: {username: alice, password: " + pass + "}",
			func(*digestServer) func(*http.Request) bool {
				return func(r *http.Request) bool { return r.Header.Get("Authorization") == basic }
			}, []string{"Authorization"}},
		{"digest", "auth: {method: digest, username: alice, password: " + pass + "}",
			func(d *digestServer) func(*http.Request) bool { return d.ok }, []string{"Authorization"}},
		{"bearer", "auth: {method: bearer, token: " + token + "}",
			func(*digestServer) func(*http.Request) bool {
				return func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }
			}, []string{"Authorization"}},
		{"bearer in a header of its own", "auth: {method: bearer, token: " + token + ", header: X-Api-Key}",
			func(*digestServer) func(*http.Request) bool {
				return func(r *http.Request) bool { return r.Header.Get("X-Api-Key") == token }
			}, []string{"X-Api-Key", "Authorization"}},
	} {
		t.Run(tc.method, func(t *testing.T) {
			t.Parallel()
			site, other := newSite(t), newSite(t)
			d := &digestServer{user: "alice", pass: pass, realm: "intranet"}
			behind(site, tc.check(d), func(w http.ResponseWriter) {
				if tc.method == "digest" {
					d.challenge(w)
					return
				}
				w.WriteHeader(http.StatusUnauthorized)
			})
			site.html("/", "home", links("/a", "/away"))
			site.html("/a", "a", "")
			site.redirect("/away", other.URL+"/landing.html")
			site.redirect("/sitemap.xml", other.URL+"/sitemap.xml")
			other.html("/landing.html", "landing", "")
			other.text("/sitemap.xml", "application/xml", fmt.Sprintf(
				`<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/listed.html</loc></url></urlset>`, other.URL))
			other.html("/listed.html", "listed", "")
			// One request at a time: the sitemap is read while the start
			// page is fetched, and two first requests would each be
			// challenged before either could learn the challenge.
			cfg, out := testConfig(t, "", fmt.Sprintf("stay_on_start_hosts: false\npoliteness: {max_parallel_per_host: 1}\nsitemaps: [%q]\n%s",
				site.URL+"/sitemap.xml", tc.auth), site.URL+"/")

			_, report := crawlKeep(t, cfg)

			want := []string{site.URL + "/", site.URL + "/a", other.URL + "/landing.html", other.URL + "/listed.html"}
			slices.Sort(want)
			if got := indexedURLs(t, out); !slices.Equal(got, want) {
				t.Errorf("indexed %v, want %v (report %+v)", got, want, report.Total.Reasons)
			}
			for _, uri := range []string{"/landing.html", "/sitemap.xml", "/listed.html"} {
				for _, h := range other.headers(uri) {
					for _, name := range tc.leaked {
						if h.Get(name) != "" {
							t.Errorf("the other host got %s on %s: %q", name, uri, h.Get(name))
						}
					}
				}
			}
			if tc.method == "digest" {
				// One challenge, then every request answers it at once.
				if d.challenges != 1 {
					t.Errorf("the server challenged %d times, want 1: the challenge is reused", d.challenges)
				}
			}
		})
	}
}

func TestCredentialsGoToTheHostsAuthNamesAndNoOther(t *testing.T) {
	t.Parallel()
	site, other := newSite(t), newSite(t)
	site.html("/", "home", links(other.URL+"/x"))
	other.html("/x", "x", "")
	// The other host is named: it gets the token; the start host is not.
	cfg, _ := testConfig(t, "", fmt.Sprintf("stay_on_start_hosts: false\nauth: {method: bearer, token: tkn, hosts: [%q]}", other.URL), site.URL+"/")
	crawlKeep(t, cfg)
	if h := site.headers("/"); len(h) != 1 || h[0].Get("Authorization") != "" {
		t.Errorf("the start host, not in auth.hosts, got %v", h)
	}
	if h := other.headers("/x"); len(h) != 1 || h[0].Get("Authorization") != "Bearer tkn" {
		t.Errorf("the host auth.hosts names got %v", h)
	}
}

func TestRefusedCredentialsHoldTheSourceForTheCycleWaitAndNeverDeleteTheDocuments(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var mu sync.Mutex
	password := "right"
	behind(site, func(r *http.Request) bool {
		_, p, _ := r.BasicAuth()
		mu.Lock()
		defer mu.Unlock()
		return p == password
	}, func(w http.ResponseWriter) { w.WriteHeader(http.StatusUnauthorized) })
	site.html("/", "home", links("/a"))
	site.html("/a", "a", "")
	cfg, out := testConfig(t, "", "max_age: 1ns\nmax_temporary_errors: 2\npoliteness: {max_parallel_per_host: 1}\nauth: {username: alice, password: right}", site.URL+"/")
	c, _ := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
	if got := indexedURLs(t, out); len(got) != 2 {
		t.Fatalf("indexed %v", got)
	}
	mu.Lock()
	password = "changed on the server"
	mu.Unlock()
	before := site.hit("/") + site.hit("/a")
	again(t, c)
	// The first refusal holds the source for the cycle: a wrong password
	// sent once a page could lock the account.
	if n := site.hit("/") + site.hit("/a") - before; n != 1 {
		t.Errorf("%d requests carried the refused credentials in one cycle, want 1", n)
	}
	for range 2 {
		again(t, c)
	}
	if got := deletedIDs(t, out); len(got) != 0 {
		t.Errorf("refused credentials deleted %d documents", len(got))
	}
	rec := record(t, c, site.URL+"/a")
	if rec.Reason != "auth_failed" || !rec.Indexed {
		t.Errorf("a page behind refused credentials: %+v, want auth_failed and still indexed", rec)
	}
}

// loginSite is an intranet behind form sign-in: a login page whose form
// carries a one-time CSRF token, sessions that end after a few pages, a
// logout link on every page, and a choice of how a signed-out request is
// answered.
type loginSite struct {
	*testSite
	mu       sync.Mutex
	password string
	tokens   map[string]bool
	sessions map[string]int // pages left
	pages    int            // pages a session lasts
	signIns  int
	refusals int
	// signedOut answers a request without a session.
	signedOut string // "redirect", "login page", "401" or "403"
}

const loginForm = `<form id="login" method="post" action="/session">
<input type="hidden" name="csrf" value="%s">
<input type="text" name="user"><input type="password" name="pass">
<input type="checkbox" name="remember" value="yes" checked><input type="checkbox" name="tracking" value="yes">
<select name="lang"><option value="en">English</option><option value="fr" selected>Français</option></select>
<button type="submit" name="go" value="in">Sign in</button><button type="submit" name="other" value="x">Other</button>
</form>`

func newLoginSite(t *testing.T, signedOut string) *loginSite {
	s := &loginSite{testSite: newSite(t), password: "pa55-word", tokens: map[string]bool{},
		sessions: map[string]int{}, pages: 4, signedOut: signedOut}
	s.handle("/login", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>Sign in</title></head><body>"+loginForm+"</body></html>", s.token())
	})
	s.handle("/session", func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		s.mu.Lock()
		valid := r.Method == http.MethodPost && s.tokens[r.PostForm.Get("csrf")] && r.PostForm.Get("user") == "alice" &&
			r.PostForm.Get("pass") == s.password && r.PostForm.Get("remember") == "yes" && r.PostForm.Get("tracking") == "" &&
			r.PostForm.Get("lang") == "fr" && r.PostForm.Get("go") == "in" && r.PostForm.Get("other") == "" && r.PostForm.Get("site") == "intranet"
		delete(s.tokens, r.PostForm.Get("csrf"))
		if !valid {
			s.refusals++
			s.mu.Unlock()
			// A refused sign-in answers 200 with the login form again.
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, "<html><body><p>Wrong password</p>"+loginForm+"</body></html>", s.token())
			return
		}
		s.signIns++
		sid := fmt.Sprintf("sid-%d", s.signIns)
		s.sessions[sid] = s.pages
		s.mu.Unlock()
		http.SetCookie(w, &http.Cookie{Name: "session", Value: sid, Path: "/", HttpOnly: true})
		http.Redirect(w, r, "/", http.StatusSeeOther)
	})
	s.handle("/logout", func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.sessions = map[string]int{}
		s.mu.Unlock()
		http.Redirect(w, r, "/login", http.StatusFound)
	})
	page := func(title, body string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			if !s.spend(r) {
				switch s.signedOut {
				case "redirect":
					http.Redirect(w, r, "/login?next="+r.URL.Path, http.StatusFound)
				case "login page":
					w.Header().Set("Content-Type", "text/html")
					fmt.Fprintf(w, "<html><body>"+loginForm+"</body></html>", s.token())
				case "401":
					w.WriteHeader(http.StatusUnauthorized)
				default:
					w.WriteHeader(http.StatusForbidden)
				}
				return
			}
			htmlPage(title, body+` <a href="/logout">Sign out</a> <a href="/login">Sign in as someone else</a>`)(w, r)
		}
	}
	s.handle("/", page("home", links("/a", "/b", "/c", "/d")))
	for _, p := range []string{"/a", "/b", "/c", "/d"} {
		s.handle(p, page("page "+p, links("/", "/a", "/b")))
	}
	return s
}

func (s *loginSite) token() string {
	var b [8]byte
	rand.Read(b[:])
	t := hex.EncodeToString(b[:])
	s.mu.Lock()
	s.tokens[t] = true
	s.mu.Unlock()
	return t
}

// spend uses up one page of the request's session.
func (s *loginSite) spend(r *http.Request) bool {
	c, err := r.Cookie("session")
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil || s.sessions[c.Value] <= 0 {
		return false
	}
	s.sessions[c.Value]--
	return true
}

func (s *loginSite) counts() (signIns, refusals int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signIns, s.refusals
}

const formAuth = `auth: {method: form, username: alice, password: pa55-word,
  form: {login_url: %s/login, username_field: user, password_field: pass, extra_fields: {site: intranet}}}`

func TestFormSignInPostsTheCSRFTokenRenewsAnExpiredSessionOnceAndNeverFollowsLogout(t *testing.T) {
	t.Parallel()
	for _, signedOut := range []string{"redirect", "login page", "401", "403"} {
		t.Run(signedOut, func(t *testing.T) {
			t.Parallel()
			site := newLoginSite(t, signedOut)
			cfg, out := testConfig(t, "", "politeness: {max_parallel_per_host: 1}\n"+fmt.Sprintf(formAuth, site.URL), site.URL+"/")
			c, report := crawlKeep(t, cfg)

			want := sortedURLs(site.URL, "/", "/a", "/b", "/c", "/d")
			if got := indexedURLs(t, out); !slices.Equal(got, want) {
				t.Fatalf("indexed %v, want %v; reasons %v", got, want, report.Total.Reasons)
			}
			if n := site.hit("/logout"); n != 0 {
				t.Errorf("the logout link was followed %d times", n)
			}
			// Five pages, sessions of four pages (the first spent on the
			// page the sign-in lands on): one sign-in, and one more when the first ran out.
			if signIns, refusals := site.counts(); signIns != 2 || refusals != 0 {
				t.Errorf("%d sign-ins and %d refusals, want 2 and 0", signIns, refusals)
			}
			wantState(t, c, site.URL+"/logout", frontier.Excluded, "logout")
			wantState(t, c, site.URL+"/login", frontier.Excluded, "login_page")
			if n := site.hit("/login"); n != 2 {
				t.Errorf("the login page was loaded %d times, want once per sign-in", n)
			}
			if len(deletedIDs(t, out)) != 0 {
				t.Errorf("deleted %v", deletedIDs(t, out))
			}
		})
	}
}

func TestAFailedFormSignInIsOneErrorThatStopsTheSourceWithoutDeletingOrRefetching(t *testing.T) {
	t.Parallel()
	site := newLoginSite(t, "redirect")
	site.pages = 1000
	// One page at a time: pages in flight when the session ends are each
	// requested once, and the test counts exactly.
	cfg, out := testConfig(t, "", "max_age: 1ns\nmax_temporary_errors: 2\npoliteness: {max_parallel_per_host: 1}\n"+fmt.Sprintf(formAuth, site.URL), site.URL+"/")
	c, _ := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
	if got := indexedURLs(t, out); len(got) != 5 {
		t.Fatalf("indexed %v", got)
	}
	site.mu.Lock()
	site.password = "changed by the admin"
	site.sessions = map[string]int{}
	site.mu.Unlock()
	pages := func() int {
		n := 0
		for _, p := range []string{"/", "/a", "/b", "/c", "/d"} {
			n += site.hit(p)
		}
		return n
	}
	before := pages()

	report := again(t, c)

	if _, refusals := site.counts(); refusals != 1 {
		t.Errorf("the refused sign-in was tried %d times in the cycle, want once", refusals)
	}
	// The first page tells the session has ended; after the failed
	// sign-in no other page is requested.
	if n := pages() - before; n != 1 {
		t.Errorf("pages behind the failed sign-in were requested %d times, want 1", n)
	}
	if len(deletedIDs(t, out)) != 0 {
		t.Errorf("a failed sign-in deleted %v", deletedIDs(t, out))
	}
	ex := exampleFor(report, "auth_failed")
	if !strings.Contains(ex, "source s: form authentication failed: credentials refused") {
		t.Errorf("the failure reads %q, want the source and the step named", ex)
	}
	rec := record(t, c, site.URL+"/a")
	if !rec.Indexed || rec.Reason != "auth_failed" {
		t.Errorf("%+v: want auth_failed, document kept", rec)
	}

	// The next cycle signs in again, once; with the right password the crawl goes on.
	site.mu.Lock()
	site.password = "pa55-word"
	site.mu.Unlock()
	again(t, c)
	if signIns, _ := site.counts(); signIns != 2 {
		t.Errorf("%d sign-ins, want a second one in the next cycle", signIns)
	}
	if rec := record(t, c, site.URL+"/a"); rec.Reason == "auth_failed" {
		t.Errorf("still %+v after a cycle that signed in", rec)
	}
}

func TestFormSignInStepsAreNamedWhenTheyFail(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, form, step string }{
		{"login page unreachable", "login_url: http://127.0.0.1:1/login%.0s", "login page unreachable"},
		{"no such form", "login_url: %s/login, action: /elsewhere", "login form not found"},
		{"no such field", "login_url: %s/login, username_field: email, password_field: pass", "field not found"},
		{"success shows no cookie", "login_url: %s/login, username_field: user, password_field: pass, extra_fields: {site: intranet}, success_cookie: other", "credentials refused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			site := newLoginSite(t, "redirect")
			cfg, out := testConfig(t, "", "max_temporary_errors: 1\nauth: {method: form, username: alice, password: pa55-word, form: {"+fmt.Sprintf(tc.form, site.URL)+"}}", site.URL+"/")
			_, report := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
			if ex := exampleFor(report, "auth_failed"); !strings.Contains(ex, ": "+tc.step+": ") {
				t.Errorf("the failure reads %q, want step %q", ex, tc.step)
			}
			if got := indexedURLs(t, out); len(got) != 0 {
				t.Errorf("indexed %v", got)
			}
		})
	}
}

func TestASitemapBehindFormSignInIsReadWithTheSession(t *testing.T) {
	t.Parallel()
	site := newLoginSite(t, "redirect")
	site.pages = 1000
	site.handle("/sitemap.xml", func(w http.ResponseWriter, r *http.Request) {
		if !site.spend(r) {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		w.Header().Set("Content-Type", "application/xml")
		fmt.Fprintf(w, `<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9"><url><loc>%s/c</loc></url></urlset>`, site.URL)
	})
	cfg, out := testConfig(t, "", fmt.Sprintf("discovery: false\nsitemaps: [%q]\n", site.URL+"/sitemap.xml")+fmt.Sprintf(formAuth, site.URL), site.URL+"/")
	_, report := crawlKeep(t, cfg)
	if got := indexedURLs(t, out); !slices.Contains(got, site.URL+"/c") {
		t.Errorf("the page the sitemap behind the login lists was not indexed: %v; reasons %v", got, report.Total.Reasons)
	}
}

func TestARobotsTxtBehindFormSignInIsReadWithTheSessionAndObeyed(t *testing.T) {
	t.Parallel()
	site := newLoginSite(t, "redirect")
	site.pages = 1000
	site.handle("/robots.txt", func(w http.ResponseWriter, r *http.Request) {
		if !site.spend(r) {
			http.Redirect(w, r, "/login", http.StatusFound)
			return
		}
		fmt.Fprint(w, "User-agent: *\nDisallow: /d\n")
	})
	cfg, out := testConfig(t, "", fmt.Sprintf(formAuth, site.URL), site.URL+"/")
	crawlKeep(t, cfg)
	if n := site.hit("/d"); n != 0 {
		t.Errorf("/d, disallowed by the robots.txt behind the login, was requested %d times", n)
	}
	if got := indexedURLs(t, out); !slices.Contains(got, site.URL+"/a") || slices.Contains(got, site.URL+"/d") {
		t.Errorf("indexed %v", got)
	}
}
