package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAuthBlocksAreCheckedPerMethodAtTheirPlace(t *testing.T) {
	t.Setenv("CRAWLSPACE_TEST_EMPTY", "")
	runErrCases(t, []errCase{
		{"an unknown method", src("auth: {method: saml, username: u, password: p}"), []string{
			`c.yaml:4:20: sources[0].auth.method: "saml" is not one of basic, digest, bearer, form, kerberos, ntlm`,
		}},
		{"keys another method reads", src("auth: {method: bearer, token: t, username: u, domain: d}"), []string{
			`c.yaml:4:48: sources[0].auth.username: is not used by method bearer`,
			`c.yaml:4:59: sources[0].auth.domain: is not used by method bearer`,
		}},
		{"two forms of one secret", src("auth: {username: u, password: p, password_env: X}"), []string{
			`c.yaml:4:35: sources[0].auth.password: give one of password, password_env and password_file`,
		}},
		{"a token is required", src("auth: {method: bearer}"), []string{
			`c.yaml:4:11: sources[0].auth.token: is required (or token_env, or token_file)`,
		}},
		{"an environment variable not set", src("auth: {username: u, password_env: CRAWLSPACE_TEST_UNSET_VARIABLE}"), []string{
			`c.yaml:4:39: sources[0].auth.password_env: environment variable CRAWLSPACE_TEST_UNSET_VARIABLE is not set`,
		}},
		{"an environment variable empty", src("auth: {method: bearer, token_env: CRAWLSPACE_TEST_EMPTY}"), []string{
			`c.yaml:4:39: sources[0].auth.token_env: environment variable CRAWLSPACE_TEST_EMPTY is empty`,
		}},
		{"a secret file missing", src("auth: {username: u, password_file: /nonexistent/pw}"), []string{
			`c.yaml:4:40: sources[0].auth.password_file: cannot read /nonexistent/pw: no such file or directory`,
		}},
		{"a bearer header the client owns", src("auth: {method: bearer, token: t, header: Host}"), []string{
			`c.yaml:4:46: sources[0].auth.header: Host is set by the HTTP client and cannot carry a token`,
		}},
		{"a header beside a bearer token in it", src("auth: {method: bearer, token: t, header: X-Key}", "headers: {x-key: v}"), []string{
			`c.yaml:5:15: sources[0].headers.x-key: conflicts with auth; use one or the other`,
		}},
		{"hosts entries", src("auth: {username: u, password: p, hosts: [\"\", \"a/b\", \"ftp://x\", \"https://x/path\"]}"), []string{
			`c.yaml:4:46: sources[0].auth.hosts[0]: must not be empty`,
			`c.yaml:4:50: sources[0].auth.hosts[1]: "a/b" is neither a host name nor scheme://host[:port]`,
			`c.yaml:4:57: sources[0].auth.hosts[2]: "ftp://x" is neither a host name nor scheme://host[:port]`,
			`c.yaml:4:68: sources[0].auth.hosts[3]: "https://x/path" is neither a host name nor scheme://host[:port]`,
		}},
		{"form sign-in needs its login page", src("auth: {method: form, username: u, password: p, form: {success_element: \"a[\"}}"), []string{
			`c.yaml:4:58: sources[0].auth.form.login_url: is required with method form`,
			`c.yaml:4:76: sources[0].auth.form.success_element: is not a CSS selector: expected identifier, found EOF instead`,
		}},
		{"kerberos needs a realm and one credential", src("auth: {method: kerberos, username: u, kerberos: {krb5_conf: /nonexistent/krb5.conf}}"), []string{
			`c.yaml:4:53: sources[0].auth.kerberos.realm: must not be empty`,
			`c.yaml:4:53: sources[0].auth.kerberos: needs a password (password, password_env, password_file) or a keytab (keytab_file, keytab_env)`,
			`c.yaml:4:65: sources[0].auth.kerberos.krb5_conf: cannot read /nonexistent/krb5.conf: no such file or directory`,
		}},
	})
}

func TestSecretsAreReadFromTheEnvironmentAndFilesRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pw"), []byte("from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRAWLSPACE_TEST_TOKEN", "from-the-environment")
	path := filepath.Join(dir, "c.yaml")
	data := "sources:\n  - name: a\n    start_urls: [http://a.example/]\n    auth: {method: digest, username: u, password_file: pw}\n" +
		"  - name: b\n    start_urls: [http://b.example/]\n    auth: {method: bearer, token_env: CRAWLSPACE_TEST_TOKEN}\n" +
		"  - name: c\n    start_urls: [http://c.example/]\n    auth: {username: u, password: p}\n"
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Sources[0].Auth.Password; got != "from-a-file" {
		t.Errorf("password_file gave %q", got)
	}
	if got, h := c.Sources[1].Auth.Token, c.Sources[1].Auth.Header; got != "from-the-environment" || h != "Authorization" {
		t.Errorf("token_env gave %q in header %q", got, h)
	}
	// An auth block written before methods existed still means basic auth.
	if got := c.Sources[2].Auth.Method; got != AuthBasic {
		t.Errorf("an auth block without a method is %q, want basic", got)
	}
}

func TestSecretsFromTheEnvironmentOrFilesAreNeverEchoedInErrors(t *testing.T) {
	const secret = "Sup3rS3cret-env"
	dir := t.TempDir()
	file := filepath.Join(dir, "pw")
	if err := os.WriteFile(file, []byte(secret), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRAWLSPACE_TEST_SECRET", secret)
	for _, bad := range []string{
		src("auth: {method: bearer, token_env: CRAWLSPACE_TEST_SECRET, username: x}"),
		src("auth: {method: bearer, token_file: " + file + ", header: \"bad header\"}"),
		src("auth: {username: u, password_env: CRAWLSPACE_TEST_SECRET, password_file: " + file + "}"),
		src("auth: {method: kerberos, username: u, password_env: CRAWLSPACE_TEST_SECRET, kerberos: {keytab_env: CRAWLSPACE_TEST_SECRET}}"),
		src("auth: {method: kerberos, username: u, kerberos: {realm: R, krb5_conf: /nonexistent, keytab_env: CRAWLSPACE_TEST_SECRET}}"),
		src("auth: {method: form, username: u, password: " + secret + ", form: {login_url: \"http://u:" + secret + "@x/\"}}"),
		src("auth: {username: u, password: p, hosts: [\"http://u:" + secret + "@x/y\"]}"),
		// The Elasticsearch connections' secrets, read the same way.
		"elasticsearch: {username: u, password_env: CRAWLSPACE_TEST_SECRET, api_key: k}\n" + minimal,
		"elasticsearch: {api_key_file: " + file + ", password: p}\n" + minimal,
		"cluster: {state_index: st, elasticsearch: {password_env: CRAWLSPACE_TEST_SECRET}}\n" + minimal,
	} {
		got := errs(t, bad)
		if len(got) == 0 {
			t.Errorf("config accepted, want an error:\n%s", bad)
		}
		for _, e := range got {
			if strings.Contains(e, secret) {
				t.Errorf("error repeats a secret: %s", e)
			}
		}
	}
}

func TestAFormsLoginPageAndLogoutPatternsChangeTheFingerprintAndItsPasswordDoesNot(t *testing.T) {
	fp := func(auth string) string {
		t.Helper()
		c, err := Parse("c.yaml", []byte(src(auth)))
		if err != nil {
			t.Fatal(err)
		}
		return Fingerprint(&c.Sources[0])
	}
	base := fp("auth: {method: form, username: u, password: a, form: {login_url: http://example.com/login}}")
	if fp("auth: {method: form, username: u, password: b, form: {login_url: http://example.com/login}}") != base {
		t.Error("a new password changed the fingerprint")
	}
	if fp("auth: {method: form, username: u, password: a, form: {login_url: http://example.com/signin}}") == base {
		t.Error("another login page left the fingerprint as it was")
	}
	if fp("auth: {method: form, username: u, password: a, form: {login_url: http://example.com/login, logout_patterns: []}}") == base {
		t.Error("other logout patterns left the fingerprint as it was")
	}
	if fp("auth: {username: u, password: a}") != fp("auth: {username: v, password: b}") {
		t.Error("basic auth's credentials changed the fingerprint")
	}
}
