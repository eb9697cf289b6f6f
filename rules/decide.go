package rules

import (
	"net/netip"
	"strings"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Decide returns the decision for u, a URL normalised with the source's
// Normalizer, found depth links away from a start URL (0 for start URLs
// and the URLs sitemaps and feeds list). The checks run in the order of
// the package comment; the first that refuses decides.
func (s *Source) Decide(u string, depth int) Decision {
	return s.decide(u, depth, true)
}

// DecideListing judges the URL of a sitemap or feed file, or of a hop of
// its redirects, as named: a request the crawler would make, so every
// check of where requests may go applies (scheme, length, login and logout
// pages, hosts, addresses, domain and prefix rules, exclude patterns, the
// reject list, crawl rules that ignore), and none of those that choose
// which pages the index holds: the query string and path and link depth
// limits, ignored extensions (sitemap.xml, feed.rss), the start directory
// and include patterns. Only Crawl and the refusal's reason and rule mean
// anything in the decision.
func (s *Source) DecideListing(u string) Decision {
	return s.decide(u, 0, false)
}

// decide is Decide, or with page false DecideListing.
func (s *Source) decide(u string, depth int, page bool) Decision {
	p, ok := urlnorm.Split(u)
	if !ok {
		return s.refuse(ReasonInvalid, "")
	}
	if !s.schemeAllowed(p.Scheme) {
		return s.refuse(ReasonScheme, s.schemesRef)
	}
	if len(u) > s.maxURLLen {
		return s.refuse(ReasonURLTooLong, s.maxURLLenRef)
	}
	if page {
		if d, refused := s.decidePage(depth, p); refused {
			return d
		}
	}
	if s.loginOrigin != "" && p.Origin == s.loginOrigin && strings.TrimSuffix(p.Path, "/") == s.loginPath {
		return s.refuse(ReasonLoginPage, s.loginRef)
	}
	if len(s.logout) > 0 && s.isLogout(p.Path, p.Query) {
		return s.refuse(ReasonLogout, s.logoutRef)
	}
	if s.stayOnHosts && !s.origins[p.Origin] {
		return s.refuse(ReasonOffsite, s.stayHostRef)
	}
	if page && s.stayInDir {
		var stack [8]int32
		if len(s.dirs.collect(u, stack[:0])) == 0 {
			return s.refuse(ReasonOutsideStartDir, s.stayDirRef)
		}
	}

	allowRule, refusal, ok := s.decideHost(p)
	if !ok {
		return refusal
	}
	if ref, allow, ok := s.prefixRule(u); ok {
		if !allow {
			return s.refuse(ReasonForbiddenPrefix, ref)
		}
		allowRule = ref
	}

	var scan scanResult
	s.pats.scan(u, &scan)
	if page && s.hasInclude {
		i := s.pats.first(gInclude, u, &scan)
		if i == noMatch {
			return s.refuse(ReasonNotIncluded, s.includeRef)
		}
		if allowRule == "" {
			allowRule = s.includeRefs[i]
		}
	}
	if i := s.pats.first(gExclude, u, &scan); i != noMatch {
		return s.refuse(ReasonExcluded, s.excludeRefs[i])
	}
	if ref, ok := s.rejected(u); ok {
		return s.refuse(ReasonRejected, ref)
	}

	d := s.allowed(allowRule)
	if cr := s.crawlRule(u, p); cr != nil {
		if cr.ignore {
			return s.refuse(ReasonRuleIgnore, cr.ref)
		}
		d.Rule = cr.ref
		if cr.index != nil {
			d.Index = *cr.index
		}
		if cr.follow != nil {
			d.Follow = *cr.follow
		}
		if cr.source != "" {
			d.Source = cr.source
		}
		d.Priority, d.Meta = cr.priority, cr.meta
	}

	if ref, ok := s.killExact[u]; ok {
		d.Index, d.Reason, d.Rule = false, ReasonKilled, ref
	} else if i := s.pats.first(gKill, u, &scan); i != noMatch {
		d.Index, d.Reason, d.Rule = false, ReasonKilled, s.killRefs[i]
	} else if !d.Index {
		d.Reason = ReasonRuleNoindex
	} else if !d.Follow {
		d.Reason = ReasonRuleNofollow
	}
	return d
}

// decideHost judges a URL's host alone: an IP-literal host by the
// address rules (its address is known without DNS: judged now, as the
// dialer would, rather than after robots.txt and the request are tried),
// then the domain rules. refusal is the refusal when ok is false;
// allowRule the allow domain rule that matched.
func (s *Source) decideHost(p urlnorm.Parts) (allowRule string, refusal Decision, ok bool) {
	if mayBeAddress(p.Host) && !s.behindProxy {
		if ip, ok := LiteralAddress(p.Host); ok {
			if d := s.DecideAddress(ip); !d.Crawl {
				return "", d, false
			}
		}
	}
	if i := s.ibm.decideDomain(p.Host, p.EffectivePort()); i != noMatch {
		ref := s.ruleRefs[s.ibm.domainAt[i]]
		if !s.ibm.domains[i].allow {
			return "", s.refuse(ReasonForbiddenDomain, ref), false
		}
		allowRule = ref
	}
	return allowRule, Decision{}, true
}

// prefixRule is the first prefix rule matching u, ok false when none does.
func (s *Source) prefixRule(u string) (ref string, allow, ok bool) {
	i := s.ibm.decidePrefix(u)
	if i == noMatch {
		return "", false, false
	}
	return s.ruleRefs[s.ibm.prefixAt[i]], s.ibm.prefixes[i].allow, true
}

// excluded is the first exclude entry matching u.
func (s *Source) excluded(u string) (string, bool) {
	var scan scanResult
	s.pats.scan(u, &scan)
	if i := s.pats.first(gExclude, u, &scan); i != noMatch {
		return s.excludeRefs[i], true
	}
	return "", false
}

// rejected is the reject list's line matching u.
func (s *Source) rejected(u string) (string, bool) {
	rl := s.reject.Load()
	if rl == nil || rl.set.empty() {
		return "", false
	}
	var rs scanResult
	rl.set.scan(u, &rs)
	if i := rl.set.first(0, u, &rs); i != noMatch {
		return rl.refs[i], true
	}
	return "", false
}

// crawlRule is the first crawl rule matching u, whose parts are p; nil
// when none does.
func (s *Source) crawlRule(u string, p urlnorm.Parts) *crawlRule {
	if len(s.crawlRules) == 0 {
		return nil
	}
	f := urlFields{v: [nFields]string{u, p.Scheme, p.Host, p.Path, p.Query}}
	for i := range s.crawlRules {
		if cr := &s.crawlRules[i]; cr.match.eval(&f) {
			return cr
		}
	}
	return nil
}

// decidePage runs the checks of Decide, in their order, that only pages
// answer to: a URL's query, its path and link depth and its extension.
func (s *Source) decidePage(depth int, p urlnorm.Parts) (Decision, bool) {
	if !s.followQuery && p.Query != "" {
		return s.refuse(ReasonQueryString, s.followQueryRef), true
	}
	if s.maxPathDepth > 0 && strings.Count(p.Path, "/") > s.maxPathDepth {
		return s.refuse(ReasonMaxPathDepth, s.maxPathRef), true
	}
	if s.maxLinkDepth > 0 && depth > s.maxLinkDepth {
		return s.refuse(ReasonMaxLinkDepth, s.maxLinkRef), true
	}
	if ref, ok := s.ignoredExtension(p.Path); ok {
		return s.refuse(ReasonIgnoredExtension, ref), true
	}
	return Decision{}, false
}

func (s *Source) schemeAllowed(scheme string) bool {
	for _, sc := range s.schemes {
		if sc == scheme {
			return true
		}
	}
	return false
}

// ignoredExtension looks the path's extension up, lower-casing it on the
// stack rather than allocating.
func (s *Source) ignoredExtension(path string) (string, bool) {
	ext := urlExtension(path)
	if ext == "" || len(ext) > 16 || len(s.ignoredExt) == 0 {
		return "", false
	}
	var buf [16]byte
	for i := 0; i < len(ext); i++ {
		c := ext[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		buf[i] = c
	}
	ref, ok := s.ignoredExt[string(buf[:len(ext)])]
	return ref, ok
}

// DecideAddress decides an address the URL's host resolved to, before the
// fetcher connects to it: the address rules (first match wins), then
// allow_private_networks, which keeps loopback, private, link-local,
// multicast and other special-purpose ranges out unless it is set. The
// fetcher should call it for the address it actually dials, so a DNS
// answer that changes between checks cannot steer it elsewhere.
func (s *Source) DecideAddress(ip netip.Addr) Decision {
	ip = ip.Unmap()
	rule := ""
	if i := s.ibm.decideAddress(ip); i != noMatch {
		ref := s.ruleRefs[s.ibm.addrAt[i]]
		if !s.ibm.addrs[i].allow {
			return s.refuse(ReasonForbiddenAddress, ref)
		}
		rule = ref
	}
	if !s.allowPrivate && IsSpecialAddress(ip) {
		return s.refuse(ReasonForbiddenAddress, s.privateRef)
	}
	return s.allowed(rule)
}

// JudgesAddresses reports whether DecideAddress can refuse anything: the
// source has address rules, or private networks are not allowed.
func (s *Source) JudgesAddresses() bool { return len(s.ibm.addrs) > 0 || !s.allowPrivate }

// LiteralAddress reads a URL's host (as urlnorm.Split gives it, IPv6
// without brackets) as an IP address, when it is one: its address is known
// without DNS, so DecideAddress can judge it before any request. A host
// name is told without parsing (or allocating).
func LiteralAddress(host string) (netip.Addr, bool) {
	if !mayBeAddress(host) {
		return netip.Addr{}, false
	}
	if strings.IndexByte(host, ':') < 0 {
		// No colon: not IPv6, which names never have; IPv4 is digits and dots.
		for i := 0; i < len(host); i++ {
			if c := host[i]; (c < '0' || c > '9') && c != '.' {
				return netip.Addr{}, false
			}
		}
	}
	ip, err := netip.ParseAddr(host)
	return ip, err == nil && ip.Zone() == ""
}

// mayBeAddress looks at a host's first byte only: an IP address starts
// with a digit, or with a hex letter or colon for IPv6; most names do not.
func mayBeAddress(host string) bool {
	return host != "" && ('0' <= host[0] && host[0] <= ':' || 'a' <= host[0] && host[0] <= 'f')
}

var nat64 = netip.MustParsePrefix("64:ff9b::/96")

// specialPrefixes are ranges that are not the public internet (RFC 6890 and
// friends), beyond what netip's predicates cover.
var specialPrefixes = []netip.Prefix{
	netip.MustParsePrefix("0.0.0.0/8"),
	netip.MustParsePrefix("100.64.0.0/10"),
	netip.MustParsePrefix("192.0.0.0/24"),
	netip.MustParsePrefix("192.0.2.0/24"),
	netip.MustParsePrefix("198.18.0.0/15"),
	netip.MustParsePrefix("198.51.100.0/24"),
	netip.MustParsePrefix("203.0.113.0/24"),
	netip.MustParsePrefix("240.0.0.0/4"),
	netip.MustParsePrefix("64:ff9b:1::/48"),
	netip.MustParsePrefix("100::/64"),
	netip.MustParsePrefix("2001:db8::/32"),
	netip.MustParsePrefix("2001::/32"),
	netip.MustParsePrefix("2002::/16"),
}

// IsSpecialAddress reports whether ip is loopback, private, link-local,
// multicast, unspecified or another range that is not the public internet,
// including IPv4 addresses embedded in NAT64 (64:ff9b::/96) addresses.
func IsSpecialAddress(ip netip.Addr) bool {
	ip = ip.Unmap()
	if ip.IsLoopback() || ip.IsPrivate() || ip.IsLinkLocalUnicast() || ip.IsMulticast() ||
		ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() || ip.IsLinkLocalMulticast() {
		return true
	}
	if ip.Is6() {
		if nat64.Contains(ip) {
			b := ip.As16()
			return IsSpecialAddress(netip.AddrFrom4([4]byte(b[12:])))
		}
	}
	for _, p := range specialPrefixes {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}

// DecideMIME decides a response from its Content-Type, before its body is
// downloaded. An extensionless URL whose type belongs to an ignored
// extension (video/mp4 and mp4) is refused as ignored_extension, as
// Smartsite does; then the type must be one of mime_types (type/* and */*
// are wildcards). An empty Content-Type is allowed: the fetcher may sniff
// the body's first bytes and call again with what it found.
func (s *Source) DecideMIME(contentType, u string) Decision {
	mt := docfields.MediaType(contentType)
	if mt == "" {
		return s.allowed("")
	}
	if p, ok := urlnorm.Split(u); ok && urlExtension(p.Path) == "" {
		if ref, ok := s.mimeIgnored[mt]; ok {
			return s.refuse(ReasonIgnoredExtension, ref)
		}
	}
	if s.mimeTypes[mt] {
		return s.allowed("")
	}
	for _, w := range s.mimeWild {
		if strings.HasPrefix(mt, w) {
			return s.allowed("")
		}
	}
	return s.refuse(ReasonMIMEType, s.mimeRef)
}

// isLogout reports whether a URL's path or query holds a logout pattern.
func (s *Source) isLogout(path, query string) bool {
	lp, lq := strings.ToLower(path), strings.ToLower(query)
	for _, pat := range s.logout {
		if strings.Contains(lp, pat) || strings.Contains(lq, pat) {
			return true
		}
	}
	return false
}
