package main

import (
	"bytes"
	"encoding/base64"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/frontier"
)

// authSite serves three pages behind check; refused requests get a 401
// with challenge as WWW-Authenticate.
func authSite(t *testing.T, check func(*http.Request) bool, challenge string) *httptest.Server {
	t.Helper()
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		if !check(r) {
			if challenge != "" {
				w.Header().Set("WWW-Authenticate", challenge)
			}
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<html><head><title>%s</title></head><body><a href="/a">a</a> <a href="/b">b</a> <a href="/logout">out</a></body></html>`, r.URL.Path)
	}))
	t.Cleanup(s.Close)
	return s
}

// signInSite is a site behind form sign-in with a CSRF token; the session
// cookie it sets is a secret too.
func signInSite(t *testing.T, password, session string) *httptest.Server {
	t.Helper()
	csrf := "csrf-tok-9d2f"
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/robots.txt":
			http.NotFound(w, r)
		case "/login":
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><body><form method="post" action="/login"><input type="hidden" name="csrf" value="%s">
<input name="username"><input type="password" name="password"></form></body></html>`, csrf)
		default:
			c, err := r.Cookie("sid")
			if err != nil || c.Value != session {
				http.Redirect(w, r, "/login", http.StatusFound)
				return
			}
			w.Header().Set("Content-Type", "text/html")
			fmt.Fprintf(w, `<html><head><title>%s</title></head><body><a href="/a">a</a> <a href="/logout">out</a></body></html>`, r.URL.Path)
		}
	}))
	// A right password gets the session cookie; a wrong one the login page again.
	inner := s.Config.Handler
	s.Config.Handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/login" && r.Method == http.MethodPost {
			r.ParseForm()
			if r.PostForm.Get("csrf") == csrf && r.PostForm.Get("password") == password {
				http.SetCookie(w, &http.Cookie{Name: "sid", Value: session, Path: "/"})
				http.Redirect(w, r, "/", http.StatusSeeOther)
				return
			}
		}
		inner.ServeHTTP(w, r)
	})
	t.Cleanup(s.Close)
	return s
}

func TestEverySecretOfEveryAuthMethodIsInNoLogReportStateStatusPageExplainOrStatusURL(t *testing.T) {
	const (
		basicPass   = "basic-Pa55-a1b2"
		wrongPass   = "wrong-Pa55-c3d4"
		digestPass  = "digest-Pa55-e5f6"
		token       = "bearer-T0k-7a8b"
		formPass    = "form-Pa55-9c0d"
		refusedPass = "refused-Pa55-1e2f"
		session     = "session-S1d-3a4b"
		krbPass     = "krb-Pa55-5c6d"
		ntlmPass    = "ntlm-Pa55-7e8f"
	)
	basicHdr := "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:"+basicPass))
	secrets := []string{basicPass, wrongPass, digestPass, token, formPass, refusedPass, session, krbPass, ntlmPass,
		basicHdr[len("Basic "):], base64.StdEncoding.EncodeToString([]byte("alice:" + wrongPass)),
		base64.StdEncoding.EncodeToString([]byte("alice:" + ntlmPass))}

	basic := authSite(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == basicHdr }, `Basic realm="x"`)
	refused := authSite(t, func(r *http.Request) bool { return false }, `Basic realm="x"`)
	digest := authSite(t, func(r *http.Request) bool {
		return strings.HasPrefix(r.Header.Get("Authorization"), `Digest username="alice"`)
	}, `Digest realm="x", qop="auth", nonce="n0nce", algorithm=MD5`)
	bearer := authSite(t, func(r *http.Request) bool { return r.Header.Get("Authorization") == "Bearer "+token }, "")
	form := signInSite(t, formPass, session)
	formRefused := signInSite(t, "another", session+"-other")
	ntlm := authSite(t, func(r *http.Request) bool { return false }, "NTLM")

	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	tokenFile := write("token", token+"\n")
	krb5 := write("krb5.conf", "[libdefaults]\n default_realm = NOWHERE.TEST\n[realms]\n NOWHERE.TEST = {\n  kdc = 127.0.0.1:1\n }\n")
	t.Setenv("CRAWLSPACE_TEST_FORM_PASSWORD", formPass)
	t.Setenv("CRAWLSPACE_TEST_DIGEST_PASSWORD", digestPass)
	_, _, path := writeConfig(t, fmt.Sprintf(`
output: {file: %q}
allow_private_networks: true
metrics_addr: 127.0.0.1:0
log: {format: json, level: debug}
sources:
  - name: basic
    start_urls: [%q]
    auth: {username: alice, password: %s}
  - name: refused
    start_urls: [%q]
    max_temporary_errors: 1
    auth: {method: basic, username: alice, password: %s}
  - name: digest
    start_urls: [%q]
    auth: {method: digest, username: alice, password_env: CRAWLSPACE_TEST_DIGEST_PASSWORD}
  - name: bearer
    start_urls: [%q]
    auth: {method: bearer, token_file: %s}
  - name: form
    start_urls: [%q]
    auth: {method: form, username: alice, password_env: CRAWLSPACE_TEST_FORM_PASSWORD, form: {login_url: %q}}
  - name: form-refused
    start_urls: [%q]
    max_temporary_errors: 1
    auth: {method: form, username: alice, password: %s, form: {login_url: %q}}
  - name: kerberos
    start_urls: [%q]
    max_temporary_errors: 1
    auth: {method: kerberos, username: alice, password: %s, kerberos: {realm: NOWHERE.TEST, krb5_conf: %s}}
  - name: ntlm
    start_urls: [%q]
    max_temporary_errors: 1
    auth: {method: ntlm, domain: CORP, username: alice, password: %s}
`, filepath.Join(dir, "docs.ndjson"), basic.URL+"/", basicPass, refused.URL+"/", wrongPass, digest.URL+"/",
		bearer.URL+"/", tokenFile, form.URL+"/", form.URL+"/login", formRefused.URL+"/", refusedPass, formRefused.URL+"/login",
		// The KDC is unreachable: the login error must not carry the password either.
		"http://localhost:"+strings.Split(basic.URL, ":")[2]+"/", krbPass, krb5, ntlm.URL+"/", ntlmPass))

	var logs, summary lockedBuffer
	reportPath := filepath.Join(dir, "report.json")
	served := runOneCycle(t, path, jsonOutput(&logs, &summary), reportPath, "/", "/metrics", "/status.json")
	texts := map[string]string{"log": logs.String(), "summary": summary.String()}
	for p, body := range served {
		texts["status page "+p] = body
	}

	// Every file the crawl wrote: the report, the documents, the state store.
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && p != tokenFile {
			b, rerr := os.ReadFile(p)
			if rerr != nil {
				t.Fatal(rerr)
			}
			texts[p] = string(b)
		}
		return nil
	})
	// The pages behind each working method were reached.
	for _, want := range []string{basic.URL + "/a", digest.URL + "/a", bearer.URL + "/a", form.URL + "/a"} {
		if !strings.Contains(texts[filepath.Join(dir, "docs.ndjson")], want) {
			t.Errorf("%s was not indexed: its authentication did not work", want)
		}
	}
	for _, step := range []string{"source refused: basic authentication failed: credentials refused",
		"source form-refused: form authentication failed: credentials refused",
		"source kerberos: kerberos authentication failed: kerberos login",
		"source ntlm: ntlm authentication failed: credentials refused"} {
		if !strings.Contains(texts["log"], step) {
			t.Errorf("the log does not say %q", step)
		}
	}

	var stderr bytes.Buffer
	cfg, set, _ := loadConfig(path, &stderr)
	front, err := frontier.Open(cfg.StateDir, frontier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	var urls []string
	frontier.ForEach(front, frontier.Query{}, func(r frontier.Record) error { urls = append(urls, r.URL); return nil })
	var status bytes.Buffer
	for _, u := range urls {
		statusOfURL(&status, cfg, set, front, u, true)
		statusOfURL(&status, cfg, set, front, u, false)
	}
	front.Close()
	texts["status -url"] = status.String()
	var out, errOut bytes.Buffer
	explain(append([]string{"-config", path, "-offline", "-json"}, urls...), &out, &errOut)
	explain(append([]string{"-config", path, "-offline"}, urls...), &out, &errOut)
	texts["explain"] = out.String() + errOut.String()
	for _, want := range []string{`"auth":"form sign-in as alice at ` + form.URL + `/login (session cookies)"`,
		`"auth":"bearer token in the Authorization header"`, `"auth":"digest as alice"`, `"auth":"ntlm as CORP\\alice"`} {
		if !strings.Contains(texts["explain"], want) {
			t.Errorf("explain does not say %s:\n%s", want, texts["explain"])
		}
	}
	if !strings.Contains(texts["status -url"], "authentication: basic as alice") {
		t.Errorf("status -url does not name the authentication:\n%s", texts["status -url"])
	}

	for name, text := range texts {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				t.Errorf("%s contains the secret %q", name, s)
			}
		}
	}
}
