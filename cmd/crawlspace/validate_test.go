package main

import (
	"bytes"
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// validate warns, at the key that allows it, when a source's reusable
// secret (basic's password, a bearer token, a form's password and
// session) would go over plain http, and exits 0: the crawl can run.
// Digest and NTLM send answers to one challenge, not the secret: no
// warning for them.
func TestValidateWarnsWhenAReusableSecretWouldGoOverPlainHTTP(t *testing.T) {
	const reuse = "would go over plain http, readable and reusable by anyone on the network path, to "
	const fix = "; use https URLs (and https:// origins in auth.hosts)"
	for _, tc := range []struct {
		name, source string
		// want is the warning after "file:", "" for none.
		want string
	}{
		{"basic to an http start URL",
			"start_urls: [http://intranet.example/]\nauth: {username: u, password: p}",
			"3:18: sources[0].start_urls[0]: the basic auth password " + reuse + "http://intranet.example" + fix},
		{"basic over https", "start_urls: [https://intranet.example/]\nauth: {username: u, password: p}", ""},
		{"bearer to an http origin of auth.hosts",
			"start_urls: [https://site.example/]\nauth: {method: bearer, token: t, hosts: [https://site.example, http://api.example:8080]}",
			"4:68: sources[0].auth.hosts[1]: the bearer token " + reuse + "http://api.example:8080" + fix},
		{"form with an http login page",
			"start_urls: [https://wiki.example/, http://wiki.example/old/]\nauth: {method: form, username: u, password: p, form: {login_url: http://sso.example/login}}",
			"3:41: sources[0].start_urls[1]: the form sign-in's password and session cookies " + reuse + "http://wiki.example, http://sso.example" + fix},
		{"form over https", "start_urls: [https://wiki.example/]\nauth: {method: form, username: u, password: p, form: {login_url: https://sso.example/login}}", ""},
		{"a host name of auth.hosts while the source crawls http",
			"start_urls: [https://intranet.example/]\nauth: {username: u, password: p, hosts: [intranet.example]}",
			"4:46: sources[0].auth.hosts[0]: the basic auth password " + reuse + "any http URL on intranet.example (a host name in auth.hosts takes any scheme)" + fix},
		{"a host name of auth.hosts while the source crawls https only",
			"start_urls: [https://intranet.example/]\nschemes: [https]\nauth: {username: u, password: p, hosts: [intranet.example]}", ""},
		{"an http start URL the credentials do not go to",
			"start_urls: [https://a.example/, http://b.example/]\nauth: {username: u, password: p, hosts: [\"https://a.example\"]}", ""},
		{"digest over http", "start_urls: [http://intranet.example/]\nauth: {method: digest, username: u, password: p}", ""},
		{"ntlm over http", "start_urls: [http://intranet.example/]\nauth: {method: ntlm, username: u, password: p}", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeYAML(t, "sources:\n  - name: s\n    "+strings.ReplaceAll(tc.source, "\n", "\n    ")+"\n")
			var out, errOut bytes.Buffer
			if code := validate([]string{"-config", cfg}, &out, &errOut); code != exitOK {
				t.Fatalf("exit %d: %s", code, errOut.String())
			}
			want := ""
			if tc.want != "" {
				want = "warning: " + cfg + ":" + tc.want + "\n"
			}
			if errOut.String() != want {
				t.Errorf("stderr:\n%s\nwant:\n%s", errOut.String(), want)
			}
			if strings.Contains(errOut.String(), "password: p") {
				t.Errorf("the warning quotes the secret: %s", errOut.String())
			}
		})
	}
}

// A billion-laughs file built of merge keys reaches one bad value at one
// key path millions of times: validate says it once, and a long value
// repeated by aliases stops at a bound instead of gigabytes of patterns.
// Loading either stays bounded in memory.
func TestValidateSaysEachErrorOfAnAliasBombOnceAndStaysBounded(t *testing.T) {
	var merge strings.Builder
	merge.WriteString("x-l0: &l0 [x]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&merge, "x-l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 8), i-1)
	}
	merge.WriteString("sources:\n  - name: a\n    start_urls: [http://a.example/]\n    politeness: {<<: *l8}\n")
	long := "x-long: &long /" + strings.Repeat("a", 1<<20) + "\nsources:\n  - name: a\n    start_urls: [http://a.example/]\n    exclude: [" +
		strings.Repeat("*long, ", 199) + "*long]\n"
	for _, tc := range []struct{ name, yaml, want string }{
		{"merge keys", merge.String(), "a merge key (<<) takes a mapping or a list of mappings"},
		{"a long value", long, "the file expands to more than 8 MiB of values"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := writeYAML(t, tc.yaml)
			var out, errOut bytes.Buffer
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			code := validate([]string{"-config", cfg}, &out, &errOut)
			runtime.ReadMemStats(&after)
			if code != exitUsage {
				t.Errorf("exit %d, want %d", code, exitUsage)
			}
			lines := strings.Split(strings.TrimSuffix(errOut.String(), "\n"), "\n")
			said, n := map[string]bool{}, 0
			for _, l := range lines {
				if said[l] {
					t.Fatalf("%d lines, some said again: %.300s", len(lines), l)
				}
				said[l] = true
				if strings.Contains(l, tc.want) {
					n++
				}
			}
			if n != 1 || len(lines) > 3 {
				t.Errorf("%d lines, %d saying %q, want it once:\n%.2000s", len(lines), n, tc.want, errOut.String())
			}
			if alloc := (after.TotalAlloc - before.TotalAlloc) >> 20; alloc > 512 {
				t.Errorf("validate allocated %d MiB", alloc)
			}
		})
	}
}
