package rules

import (
	"net/netip"
	"strings"
	"testing"
)

func ibmSource(t *testing.T, start string, rules ...string) *Source {
	t.Helper()
	lines := []string{`start_urls: ["` + start + `"]`, `stay_on_start_hosts: false`, `rules:`}
	for _, r := range rules {
		lines = append(lines, `  - "`+r+`"`)
	}
	return compileYAML(t, source(lines...)).Source("site")
}

func TestIBMDomainRulesWithWildcardsAndTheFinalForbid(t *testing.T) {
	s := ibmSource(t, "http://www.ibm.com/",
		"forbid domain server*.ibm.com",
		"allow domain www.ibm.com",
		"allow domain *.user.ibm.com",
		"allow domain *.lotus.com",
		"forbid domain *",
	)
	checkTable(t, s, []want{
		{"http://www.ibm.com/", true, ReasonNone},
		{"http://server1.ibm.com/", false, ReasonForbiddenDomain},
		{"http://server.ibm.com/", false, ReasonForbiddenDomain},
		{"http://serverfarm.eu.ibm.com/", false, ReasonForbiddenDomain},
		{"http://joe.user.ibm.com/", true, ReasonNone},
		{"http://mary.smith.user.ibm.com/", true, ReasonNone},
		{"http://user.ibm.com/", false, ReasonForbiddenDomain},
		{"http://notes.lotus.com/", true, ReasonNone},
		{"http://www.example.com/", false, ReasonForbiddenDomain},
	})
	if d := decide(t, s, "http://server1.ibm.com/", 1); d.Rule != "crawl.yaml:7:9 sources[0].rules[0]" {
		t.Errorf("rule = %q", d.Rule)
	}
	if d := decide(t, s, "http://www.example.com/", 1); !strings.HasSuffix(d.Rule, "rules[4]") {
		t.Errorf("rule = %q, want the final forbid", d.Rule)
	}
	if d := decide(t, s, "http://joe.user.ibm.com/", 1); !strings.HasSuffix(d.Rule, "rules[2]") {
		t.Errorf("an allowed URL names the allow rule that let it in, got %q", d.Rule)
	}
}

// "*.user.ibm.com matches joe.user.ibm.com and mary.smith.user.ibm.com, but
// not joe.user.IBM.com": the match itself is case-sensitive. URLs reach the
// rules normalised, so a link written joe.user.IBM.com is lower-cased first
// (host names are case-insensitive in DNS), and a pattern with upper-case
// letters, which could then never match, is a config error.
func TestIBMDomainMatchingIsCaseSensitiveAndHostsAreNormalisedFirst(t *testing.T) {
	s := ibmSource(t, "http://joe.user.ibm.com/", "allow domain *.user.ibm.com", "forbid domain *")
	if d := s.Decide("http://joe.user.IBM.com/", 1); d.Crawl {
		t.Errorf("the case-sensitive match accepted joe.user.IBM.com: %+v", d)
	}
	if d := decide(t, s, "http://joe.user.IBM.com/", 1); !d.Crawl {
		t.Errorf("the normalised link joe.user.ibm.com was refused: %+v", d)
	}
	errs := compileErrors(t, source(
		`start_urls: ["http://joe.user.ibm.com/"]`,
		`rules: ["allow domain *.user.IBM.com"]`,
	))
	if !errorsMention(errs, "sources[0].rules[0]", "case-sensitively", `"*.user.ibm.com"`) {
		t.Errorf("errors = %v", errs)
	}
}

func TestIBMDomainRulePortAppliesToThatPortOnly(t *testing.T) {
	s := ibmSource(t, "https://sales.ibm.com/", "allow domain sales.ibm.com:443", "forbid domain *")
	checkTable(t, s, []want{
		{"https://sales.ibm.com/", true, ReasonNone},
		{"http://sales.ibm.com:443/", true, ReasonNone},
		{"http://sales.ibm.com/", false, ReasonForbiddenDomain},
		{"https://sales.ibm.com:8443/", false, ReasonForbiddenDomain},
	})
	all := ibmSource(t, "http://sales.ibm.com/", "allow domain sales.ibm.com", "forbid domain *")
	checkTable(t, all, []want{
		{"http://sales.ibm.com/", true, ReasonNone},
		{"http://sales.ibm.com:9080/", true, ReasonNone},
		{"https://sales.ibm.com:8443/", true, ReasonNone},
	})
}

func TestIBMPrefixRulesAllowPublicForbidTheRest(t *testing.T) {
	s := ibmSource(t, "http://sales.ibm.com/public/",
		"allow prefix http://sales.ibm.com/public/*",
		"forbid prefix http://sales.ibm.com/*",
	)
	checkTable(t, s, []want{
		{"http://sales.ibm.com/public/", true, ReasonNone},
		{"http://sales.ibm.com/public/a/b.html?id=1", true, ReasonNone},
		{"http://sales.ibm.com/", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/private/x", false, ReasonForbiddenPrefix},
		{"http://www.ibm.com/anything", true, ReasonNone}, // no prefix rule matches: allowed
	})
}

// "forbid http://sales.ibm.com/*fs/*" (the word prefix left out, as in the
// seed): any document in a top-level directory whose name ends in fs.
func TestIBMPrefixWithSeveralWildcardsMatchesTopLevelDirectoriesEndingInFs(t *testing.T) {
	s := ibmSource(t, "http://sales.ibm.com/", "forbid http://sales.ibm.com/*fs/*")
	checkTable(t, s, []want{
		{"http://sales.ibm.com/nfs/doc.html", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/afs/", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/fs/x", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/docs/nfs/a.html", true, ReasonNone},
		{"http://sales.ibm.com/fsdocs/a.html", true, ReasonNone},
		{"http://sales.ibm.com/nfs", true, ReasonNone},
	})
	more := ibmSource(t, "http://a.example/", "forbid prefix http://*.example/*/private/*.pdf")
	checkTable(t, more, []want{
		{"http://a.example/x/private/y.pdf", false, ReasonForbiddenPrefix},
		{"http://a.example/x/private/y.pdf?v=2", false, ReasonForbiddenPrefix},
		{"http://a.example/x/private/y.html", true, ReasonNone},
		{"http://a.example/x/z/private/y.pdf", true, ReasonNone},
	})
}

func TestIBMPrefixTargetsAreSpelledLikeNormalisedURLs(t *testing.T) {
	s := ibmSource(t, "http://sales.ibm.com/", "forbid prefix HTTP://Sales.IBM.com:80/my%7edocs/caf%c3%a9/*")
	checkTable(t, s, []want{
		{"http://sales.ibm.com/~my~docs/x", true, ReasonNone},
		{"http://sales.ibm.com/my~docs/café/a", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/my%7Edocs/caf%C3%A9/a", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/other", true, ReasonNone},
	})
}

func TestIBMFirstMatchingRuleWithinATypeDecides(t *testing.T) {
	s := ibmSource(t, "http://sales.ibm.com/public/",
		"forbid prefix http://sales.ibm.com/public/secret/*",
		"allow prefix http://sales.ibm.com/public/*",
		"forbid prefix http://sales.ibm.com/*",
		"allow prefix http://sales.ibm.com/public/secret/ok/*",
	)
	checkTable(t, s, []want{
		{"http://sales.ibm.com/public/secret/ok/x", false, ReasonForbiddenPrefix},
		{"http://sales.ibm.com/public/page", true, ReasonNone},
	})
	if d := decide(t, s, "http://sales.ibm.com/public/secret/ok/x", 1); !strings.HasSuffix(d.Rule, "rules[0]") {
		t.Errorf("rule = %q, want the first matching rule", d.Rule)
	}
}

// Types are independent: an allow prefix rule does not override a forbid
// domain rule, nor an allow domain rule a forbid prefix rule.
func TestIBMRuleTypesAreIndependent(t *testing.T) {
	s := ibmSource(t, "http://www.ibm.com/",
		"allow prefix http://sales.ibm.com/public/*",
		"forbid domain sales.ibm.com",
		"allow domain *.ibm.com",
		"forbid prefix http://www.ibm.com/private/*",
	)
	checkTable(t, s, []want{
		{"http://sales.ibm.com/public/a", false, ReasonForbiddenDomain},
		{"http://www.ibm.com/private/a", false, ReasonForbiddenPrefix},
		{"http://www.ibm.com/public/a", true, ReasonNone},
	})
}

func TestIBMAddressRulesMatchTheResolvedAddressUnderItsNetmask(t *testing.T) {
	s := ibmSource(t, "http://w3.ibm.com/",
		"allow address 9.0.0.0 255.0.0.0",
		"allow address [2001:db8:0:1:0:0:0:1]",
		"forbid address 0.0.0.0 0.0.0.0",
	)
	for addr, ok := range map[string]bool{
		"9.0.0.1": true, "9.255.1.2": true, "::ffff:9.1.2.3": true, "10.0.0.1": false, "8.8.8.8": false,
		"2001:db8:0:1::1": true, "2001:db8:0:1::2": false,
	} {
		d := s.DecideAddress(netip.MustParseAddr(addr))
		if d.Crawl != ok {
			t.Errorf("%s: %+v, want crawl=%v", addr, d, ok)
		}
		if !ok && (d.Reason != ReasonForbiddenAddress || !strings.HasSuffix(d.Rule, "rules[2]")) {
			t.Errorf("%s: %q by %q, want forbidden_address by rules[2] (an all-zero netmask matches any address)", addr, d.Reason, d.Rule)
		}
	}
	v6 := ibmSource(t, "http://w3.ibm.com/", "allow address [2001:db8::] [ffff:ffff::]", "forbid address :: ::")
	for addr, ok := range map[string]bool{"2001:db8:1::5": true, "2001:db9::1": false, "9.1.1.1": false} {
		if d := v6.DecideAddress(netip.MustParseAddr(addr)); d.Crawl != ok {
			t.Errorf("%s: %+v, want crawl=%v", addr, d, ok)
		}
	}
	cidr := ibmSource(t, "http://w3.ibm.com/", "forbid address 192.0.2.0/24", "allow address 203.0.113.0 255.255.0.255")
	for addr, ok := range map[string]bool{"192.0.2.9": false, "192.0.3.9": true} {
		if d := cidr.DecideAddress(netip.MustParseAddr(addr)); d.Crawl != ok {
			t.Errorf("%s: %+v", addr, d)
		}
	}
}

func TestPrivateAddressesNeedAllowPrivateNetworks(t *testing.T) {
	closed := compileYAML(t, "sources:\n  - name: site\n    start_urls: [\"http://www.example.com/\"]\n").Source("site")
	open := ibmSource(t, "http://www.example.com/")
	for _, a := range []string{"127.0.0.1", "10.1.2.3", "192.168.0.1", "169.254.169.254", "::1", "fd00::1", "fe80::1", "0.0.0.0", "100.64.0.1", "::ffff:127.0.0.1", "64:ff9b::a00:1"} {
		ip := netip.MustParseAddr(a)
		if d := closed.DecideAddress(ip); d.Crawl || d.Reason != ReasonForbiddenAddress || !strings.Contains(d.Rule, "allow_private_networks") {
			t.Errorf("%s without allow_private_networks: %+v", a, d)
		}
		if d := open.DecideAddress(ip); !d.Crawl {
			t.Errorf("%s with allow_private_networks: %+v", a, d)
		}
	}
	for _, a := range []string{"93.184.216.34", "2606:2800:220:1::1", "64:ff9b::5db8:d822"} {
		if d := closed.DecideAddress(netip.MustParseAddr(a)); !d.Crawl {
			t.Errorf("public %s refused: %+v", a, d)
		}
	}
}

func TestIBMBadRulesAndNetmasksAreConfigErrors(t *testing.T) {
	for rule, words := range map[string]string{
		"allow address 9.0.0.0 255.0.0":           "netmask",
		"allow address 9.0.0.0 ffff::":            "IPv6 but address 9.0.0.0 is IPv4",
		"allow address 300.1.1.1":                 "not an IPv4 or IPv6 address",
		"allow address [fe80::1%eth0]":            "not an IPv4 or IPv6 address",
		"allow address 9.0.0.0/40":                "prefix length",
		"allow domain sales.ibm.com:0":            "port",
		"allow domain sales.ibm.com:http":         "port",
		"allow domain http://sales.ibm.com/":      "prefix rule",
		"allow domain sales ibm.com":              "one target",
		"allow domain sales$.ibm.com":             "not allowed in a host name",
		"allow prefix sales.ibm.com/public/":      "not a URL pattern",
		"allow prefix http://exa mple.com:x/":     "one target",
		"allow prefix http://example.com:99999/*": "invalid port",
		"permit domain www.ibm.com":               "allow or forbid",
		"allow hostname www.ibm.com":              "domain, prefix or address",
	} {
		errs := compileErrors(t, source(`start_urls: ["http://www.ibm.com/"]`, `rules: ["`+rule+`"]`))
		found := false
		for _, e := range errs {
			found = found || (e.Path == "sources[0].rules[0]" && strings.Contains(e.Error(), words))
		}
		if !found {
			t.Errorf("%q: errors %v do not say %q", rule, errs, words)
		}
	}
}

func TestStartURLForbiddenByItsOwnRulesIsAConfigError(t *testing.T) {
	errs := compileErrors(t, source(
		`start_urls: ["http://www.ibm.com/", "http://sales.ibm.com/"]`,
		`rules: ["allow domain www.ibm.com", "forbid domain *"]`,
	))
	if len(errs) != 1 || errs[0].Path != "sources[0].start_urls[1]" || !strings.Contains(errs[0].Msg, "forbidden_domain") ||
		!strings.Contains(errs[0].Msg, "sources[0].rules[1]") {
		t.Errorf("errors = %v", errs)
	}
	errs = compileErrors(t, "sources:\n  - name: site\n    start_urls: [\"http://127.0.0.1:8080/\"]\n")
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "allow_private_networks") {
		t.Errorf("a loopback start URL without allow_private_networks: %v", errs)
	}
	errs = compileErrors(t, source(`start_urls: ["http://www.ibm.com/setup.exe"]`))
	if len(errs) != 1 || !strings.Contains(errs[0].Msg, "ignored_extension") {
		t.Errorf("an ignored start URL: %v", errs)
	}
}

func TestIPv6StartURLsInBracketsAreOneURL(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://[2001:db8:0:1:0:0:0:1]", "http://[2001:db8:0:1::1]"]`)).Source("site")
	if got := s.StartURLs(); len(got) != 2 || got[0] != "http://[2001:db8:0:1::1]/" || got[1] != got[0] {
		t.Errorf("start URLs = %q", got)
	}
	checkTable(t, s, []want{{"http://[2001:DB8:0:1::1]/page", true, ReasonNone}})
}

func TestMaxPathDepthCountsSlashesFromTheSiteRoot(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `max_path_depth: 3`)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/", true, ReasonNone},
		{"http://site.example/a/b/c", true, ReasonNone},
		{"http://site.example/a/b/c/", false, ReasonMaxPathDepth},
		{"http://site.example/a/b/c/d", false, ReasonMaxPathDepth},
	})
}

func TestMaxLinkDepthCountsHopsFromAStartURL(t *testing.T) {
	s := compileYAML(t, source(`start_urls: ["http://site.example/"]`, `max_link_depth: 2`)).Source("site")
	for depth, ok := range map[int]bool{0: true, 2: true, 3: false} {
		d := decide(t, s, "http://site.example/page", depth)
		if d.Crawl != ok || (!ok && d.Reason != ReasonMaxLinkDepth) {
			t.Errorf("depth %d: %+v", depth, d)
		}
	}
}

func TestMIMETypesDecideWhatIsIndexed(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`mime_types: [text/html, application/pdf, "image/*"]`,
	)).Source("site")
	for ct, ok := range map[string]bool{
		"text/html; charset=utf-8": true, "TEXT/HTML": true, "application/pdf": true, "image/webp": true,
		"application/zip": false, "text/plain": false, "": true,
	} {
		d := s.DecideMIME(ct, "http://site.example/doc.php")
		if d.Crawl != ok || (!ok && d.Reason != ReasonMIMEType) {
			t.Errorf("%q: %+v", ct, d)
		}
	}
	def := compileYAML(t, source(`start_urls: ["http://site.example/"]`)).Source("site")
	if d := def.DecideMIME("application/xhtml+xml", "http://site.example/x.php"); !d.Crawl {
		t.Errorf("the default mime_types refuse XHTML: %+v", d)
	}
	// The defaults are the types crawlspace reads: documents yes, archives and images no.
	if d := def.DecideMIME("application/pdf", "http://site.example/x.php"); !d.Crawl {
		t.Errorf("the default mime_types refuse a PDF: %+v", d)
	}
	if d := def.DecideMIME("application/zip", "http://site.example/x.php"); d.Reason != ReasonMIMEType || !strings.HasSuffix(d.Rule, "mime_types") {
		t.Errorf("default mime_types let a zip archive in: %+v", d)
	}
}

// A host that is an IP address needs no DNS: Decide judges it by the
// address rules and allow_private_networks, as the dialer would, so the
// link is refused before any request (robots.txt included). Behind a proxy
// the dialer judges no address, and neither does Decide.
func TestIPLiteralHostsAreJudgedByTheAddressRulesWithTheURL(t *testing.T) {
	rules := `rules: ["allow address 9.0.0.0 255.0.0.0", "forbid address 0.0.0.0 0.0.0.0"]`
	s := compileYAML(t, source(`start_urls: ["http://9.1.1.1/"]`, `stay_on_start_hosts: false`, rules)).Source("site")
	checkTable(t, s, []want{
		{"http://9.2.3.4/a", true, ReasonNone},
		{"http://10.1.1.1/a", false, ReasonForbiddenAddress},
		{"http://[2001:db8::1]/a", false, ReasonForbiddenAddress},
		{"http://[::ffff:9.1.1.1]/a", true, ReasonNone},
		{"http://www.example.com/a", true, ReasonNone}, // a name: judged after DNS
		{"http://10.1.1.1.example.com/a", true, ReasonNone},
	})
	if d := decide(t, s, "http://10.1.1.1/a", 1); !strings.HasSuffix(d.Rule, "sources[0].rules[1]") {
		t.Errorf("rule %q, want the forbid address rule", d.Rule)
	}
	closed := compileYAML(t, "sources:\n  - name: site\n    start_urls: [\"http://www.example.com/\"]\n    stay_on_start_hosts: false\n").Source("site")
	checkTable(t, closed, []want{
		{"http://127.0.0.1:8080/", false, ReasonForbiddenAddress},
		{"http://[::1]/", false, ReasonForbiddenAddress},
		{"http://169.254.169.254/latest/meta-data/", false, ReasonForbiddenAddress},
		{"http://93.184.216.34/", true, ReasonNone},
	})
	proxied := compileYAML(t, "fetch: {proxy: \"http://proxy.example:3128\"}\n"+source(`start_urls: ["http://9.1.1.1/"]`, `stay_on_start_hosts: false`, rules)).Source("site")
	checkTable(t, proxied, []want{{"http://10.1.1.1/a", true, ReasonNone}})
	for _, u := range []string{"http://www.example.com/a", "http://93.184.216.34/a", "http://10.1.1.1/a"} {
		if n := testing.AllocsPerRun(100, func() { s.Decide(u, 1) }); n != 0 {
			t.Errorf("Decide(%s) allocates %v times", u, n)
		}
	}
}
