package main

import (
	"bytes"
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
