package rules

import "github.com/crawlspace/crawlspace/urlnorm"

// DecideRequest judges a request that a page being rendered makes for
// something other than itself (a script, a stylesheet, a fetch() or XHR
// call, a frame): u, as found (urlnorm.Found), is asked for by the page
// at page.
//
// Such a request is not a page of the crawl: it is never queued, indexed
// or followed, so the rules about which pages to crawl do not apply to it
// (include, stay_on_start_hosts, stay_in_start_dir, depths, extensions,
// query strings): a page's script from a CDN or its data from an API host
// is what the page is made of. The rules that keep a host out do apply,
// since an operator who excluded a host expects no request to reach it:
//
//   - the address rules and allow_private_networks (for an IP-literal
//     host here; for a name, the dialer judges the address it resolves to);
//   - the domain rules;
//   - a prefix rule, an exclude entry, a reject list line or an ignoring
//     crawl rule that refuses the host's root URL (scheme://host[:port]/)
//     refuses the requests to that host it also refuses: the rule keeps
//     the whole host out, not some of its pages. One that spares the root
//     (exclude /private/) is about pages and lets requests through. The
//     page's own host is never refused this way: its page is crawled, so
//     no rule keeps that host out;
//   - the logout patterns of a form sign-in, on any host: one request
//     would end the session.
//
// robots.txt and politeness are the caller's, as for a page.
func (s *Source) DecideRequest(u, page string) Decision {
	p, ok := urlnorm.Split(u)
	if !ok {
		return s.refuse(ReasonInvalid, "")
	}
	if len(s.logout) > 0 && s.isLogout(p.Path, p.Query) {
		return s.refuse(ReasonLogout, s.logoutRef)
	}
	if p.Origin == urlnorm.Origin(page) {
		return s.allowed("")
	}
	if _, refusal, ok := s.decideHost(p); !ok {
		return refusal
	}
	root := p.Origin + "/"
	for _, r := range []struct {
		reason  Reason
		refuses func(string) (string, bool)
	}{
		{ReasonForbiddenPrefix, s.forbidsPrefix},
		{ReasonExcluded, s.excluded},
		{ReasonRejected, s.rejected},
		{ReasonRuleIgnore, s.ignores},
	} {
		if _, whole := r.refuses(root); whole {
			if ref, ok := r.refuses(u); ok {
				return s.refuse(r.reason, ref)
			}
		}
	}
	return s.allowed("")
}

// forbidsPrefix is the forbidding prefix rule that decides u.
func (s *Source) forbidsPrefix(u string) (string, bool) {
	ref, allow, ok := s.prefixRule(u)
	return ref, ok && !allow
}

// ignores is the crawl rule that decides u when it ignores u.
func (s *Source) ignores(u string) (string, bool) {
	p, ok := urlnorm.Split(u)
	if !ok {
		return "", false
	}
	if cr := s.crawlRule(u, p); cr != nil && cr.ignore {
		return cr.ref, true
	}
	return "", false
}
