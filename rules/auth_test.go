package rules

import (
	"strings"
	"testing"
)

func TestFormSignInKeepsItsLoginPageAndLogoutLinksOutOfTheCrawlSpaceAsConfigured(t *testing.T) {
	for _, tc := range []struct {
		name, patterns string
		want           []want
	}{
		{"default patterns", "", []want{
			{"https://wiki.example/login", false, ReasonLoginPage},
			{"https://wiki.example/login/?next=/a", false, ReasonLoginPage},
			{"https://wiki.example/login.html", true, ""},
			{"https://wiki.example/user/LogOut", false, ReasonLogout},
			{"https://wiki.example/do?action=sign-out", false, ReasonLogout},
			{"https://wiki.example/signoff", true, ""},
			{"https://wiki.example/a", true, ""},
		}},
		{"patterns of its own", ", logout_patterns: [signoff]", []want{
			{"https://wiki.example/signoff", false, ReasonLogout},
			{"https://wiki.example/logout", true, ""},
		}},
		{"no patterns", ", logout_patterns: []", []want{
			{"https://wiki.example/logout", true, ""},
			{"https://wiki.example/login", false, ReasonLoginPage},
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := compileYAML(t, source("start_urls: [https://wiki.example/]",
				"auth: {method: form, username: u, password: p, form: {login_url: https://wiki.example/login"+tc.patterns+"}}"))
			s := set.Source("site")
			for _, w := range tc.want {
				d := decide(t, s, w.url, 1)
				if d.Crawl != w.crawl || d.Reason != w.reason {
					t.Errorf("%s: crawl %v reason %q, want %v %q", w.url, d.Crawl, d.Reason, w.crawl, w.reason)
				}
				if !d.Crawl && !strings.Contains(d.Rule, "auth.form.") {
					t.Errorf("%s: rule %q does not name the auth.form key", w.url, d.Rule)
				}
			}
		})
	}
}

func TestAStartURLThatIsTheLoginPageOrALogoutLinkIsAnError(t *testing.T) {
	errs := compileErrors(t, source("start_urls: [https://wiki.example/login, https://wiki.example/logout]",
		"auth: {method: form, username: u, password: p, form: {login_url: https://wiki.example/login}}"))
	if len(errs) != 2 {
		t.Fatalf("errors %v, want one per start URL", errs)
	}
}
