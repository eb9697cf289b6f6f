package urlnorm

import "strings"

// Parts are the components of a normalised URL, as substrings of it.
type Parts struct {
	// Origin is "scheme://host[:port]", the URL up to its path.
	Origin string
	Scheme string
	// Host is the host name, or an IPv6 literal without its brackets.
	Host string
	// Port is the explicit port, "" when the scheme's default applies.
	Port string
	// Path starts with "/".
	Path string
	// Query is what follows "?", without it; "" when there is none.
	Query string
}

// Split cuts a URL that Normalize produced into its parts without
// allocating. It trusts its input: it checks only the scheme://host/ shape
// and reports false when that is missing.
func Split(s string) (Parts, bool) {
	var p Parts
	i := strings.Index(s, "://")
	if i <= 0 {
		return p, false
	}
	p.Scheme = s[:i]
	rest := s[i+3:]
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	host := rest[:end]
	p.Origin = s[:i+3+end]
	rest = rest[end:]
	if strings.HasPrefix(host, "[") {
		j := strings.IndexByte(host, ']')
		if j < 0 {
			return p, false
		}
		p.Host = host[1:j]
		if strings.HasPrefix(host[j+1:], ":") {
			p.Port = host[j+2:]
		}
	} else if j := strings.LastIndexByte(host, ':'); j >= 0 {
		p.Host, p.Port = host[:j], host[j+1:]
	} else {
		p.Host = host
	}
	if p.Host == "" {
		return p, false
	}
	p.Path = rest
	if j := strings.IndexByte(rest, '?'); j >= 0 {
		p.Path, p.Query = rest[:j], rest[j+1:]
	}
	if p.Path == "" {
		p.Path = "/"
	}
	return p, true
}

// EffectivePort is the port the URL's requests go to: the explicit one or
// the scheme's default.
func (p Parts) EffectivePort() string {
	if p.Port != "" {
		return p.Port
	}
	return DefaultPort(p.Scheme)
}

// Origin returns "scheme://host[:port]" of a URL as written, user
// information left out, or "" when the URL is not absolute. It is the key
// of a host wherever one is kept (the store's scheduling, politeness, a
// source's own hosts); for a URL Normalize produced it equals
// Split(url).Origin, without checking the rest.
func Origin(url string) string {
	i := strings.Index(url, "://")
	if i <= 0 {
		return ""
	}
	rest := url[i+3:]
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	if end == 0 {
		return ""
	}
	if at := strings.LastIndexByte(rest[:end], '@'); at >= 0 {
		return url[:i+3] + rest[at+1:end]
	}
	return url[:i+3+end]
}

// RequestTarget is the path and query of a URL Normalize or Found wrote,
// "/" at least: what a request for it asks for, and what robots.txt
// judges.
func RequestTarget(u string) string {
	i := strings.Index(u, "://")
	if i < 0 {
		return "/"
	}
	rest := u[i+3:]
	j := strings.IndexAny(rest, "/?")
	switch {
	case j < 0:
		return "/"
	case rest[j] == '?':
		return "/" + rest[j:]
	}
	return rest[j:]
}
