package provider_test

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/provider"
)

// authServers reads the settings scripts/authservers wrote for the real
// KDC and Apache httpd this run started (CRAWLSPACE_AUTH_DIR, set by
// scripts/test). Without them the test skips, or fails under CI, where a
// run must never pass by skipping.
func authServers(t *testing.T) map[string]string {
	t.Helper()
	dir := os.Getenv("CRAWLSPACE_AUTH_DIR")
	f, err := os.Open(filepath.Join(dir, "env"))
	if dir == "" || err != nil {
		switch strings.ToLower(os.Getenv("CI")) {
		case "", "0", "false", "no":
			t.Skip("no Kerberos KDC and Apache httpd: run scripts/test, or scripts/authservers start DIR and set CRAWLSPACE_AUTH_DIR=DIR")
		}
		t.Fatalf("CI needs the authentication servers of scripts/authservers (CRAWLSPACE_AUTH_DIR=%q): %v", dir, err)
	}
	defer f.Close()
	env := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), "="); ok {
			env[k] = v
		}
	}
	return env
}

func TestKerberosSignsInWithAPasswordOrAKeytabAtARealKDCAndReadsPagesBehindApacheModAuthGSSAPI(t *testing.T) {
	t.Parallel()
	env := authServers(t)
	base := env["KRB5_URL"]
	for _, tc := range []struct{ name, auth string }{
		{"password", fmt.Sprintf("auth: {method: kerberos, username: %s, password: %s, kerberos: {realm: %s, krb5_conf: %s}}",
			env["KRB5_USER"], env["KRB5_PASSWORD"], env["KRB5_REALM"], env["KRB5_CONF"])},
		{"keytab", fmt.Sprintf("auth: {method: kerberos, username: %s, kerberos: {realm: %s, krb5_conf: %s, keytab_file: %s}}",
			env["KRB5_KEYTAB_USER"], env["KRB5_REALM"], env["KRB5_CONF"], env["KRB5_KEYTAB"])},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg, out := testConfig(t, "", tc.auth, base)
			_, report := crawlKeep(t, cfg)
			want := []string{base, base + "index.html", base + "page.html"}
			got := indexedURLs(t, out)
			for _, u := range got {
				if !slices.Contains(want, u) {
					t.Errorf("indexed %s", u)
				}
			}
			if !slices.Contains(got, base+"page.html") {
				t.Errorf("the page behind SPNEGO was not indexed: %v; reasons %v", got, report.Total.Reasons)
			}
		})
	}
}

func TestAKerberosPasswordTheKDCRefusesIsOneAuthFailureAndNoPageIsIndexedOrDeleted(t *testing.T) {
	t.Parallel()
	env := authServers(t)
	cfg, out := testConfig(t, "", fmt.Sprintf("max_temporary_errors: 1\nauth: {method: kerberos, username: %s, password: not-the-password, kerberos: {realm: %s, krb5_conf: %s}}",
		env["KRB5_USER"], env["KRB5_REALM"], env["KRB5_CONF"]), env["KRB5_URL"])
	_, report := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
	ex := exampleFor(report, "auth_failed")
	if !strings.Contains(ex, "source s: kerberos authentication failed: kerberos login") {
		t.Errorf("the failure reads %q", ex)
	}
	t.Logf("the failure reads %q", ex)
	if got := indexedURLs(t, out); len(got) != 0 {
		t.Errorf("indexed %v", got)
	}
}

func TestDigestSignsInAtApacheModAuthDigest(t *testing.T) {
	t.Parallel()
	env := authServers(t)
	base := env["DIGEST_URL"]
	cfg, out := testConfig(t, "", fmt.Sprintf("auth: {method: digest, username: %s, password: %s}", env["DIGEST_USER"], env["DIGEST_PASSWORD"]), base)
	_, report := crawlKeep(t, cfg)
	if got := indexedURLs(t, out); !slices.Contains(got, base+"page.html") {
		t.Errorf("the page behind Digest was not indexed: %v; reasons %v", got, report.Total.Reasons)
	}
}

func TestNTLMSignsInAtAPyspnegoAcceptorAndAWrongPasswordIsAnAuthFailure(t *testing.T) {
	t.Parallel()
	env := authServers(t)
	base := env["NTLM_URL"]
	if base == "" {
		switch strings.ToLower(os.Getenv("CI")) {
		case "", "0", "false", "no":
			t.Skip("no NTLM server: scripts/authservers starts one with CRAWLSPACE_NTLM_PYTHON, a python with pyspnego")
		}
		t.Fatal("CI needs the NTLM server of scripts/authservers")
	}
	auth := func(pass string) string {
		return fmt.Sprintf("max_temporary_errors: 1\nauth: {method: ntlm, domain: %s, username: %s, password: %s}", env["NTLM_DOMAIN"], env["NTLM_USER"], pass)
	}
	t.Run("right password", func(t *testing.T) {
		t.Parallel()
		cfg, out := testConfig(t, "", auth(env["NTLM_PASSWORD"]), base)
		_, report := crawlKeep(t, cfg)
		if got := indexedURLs(t, out); !slices.Contains(got, base+"page.html") {
			t.Errorf("the page behind NTLM was not indexed: %v; reasons %v", got, report.Total.Reasons)
		}
	})
	t.Run("wrong password", func(t *testing.T) {
		t.Parallel()
		cfg, out := testConfig(t, "", auth("not-the-password"), base)
		_, report := crawlTimed(t, cfg, provider.Timing{RetryBase: time.Millisecond})
		if ex := exampleFor(report, "auth_failed"); !strings.Contains(ex, "source s: ntlm authentication failed: credentials refused") {
			t.Errorf("the failure reads %q; reasons %v", ex, report.Total.Reasons)
		}
		if got := indexedURLs(t, out); len(got) != 0 {
			t.Errorf("indexed %v", got)
		}
	})
}
