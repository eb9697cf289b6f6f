// Package robots implements the Robots Exclusion Protocol (RFC 9309) and a
// per-origin cache of robots.txt files.
//
// The parser and matcher are our own; github.com/temoto/robotstxt is used only
// in tests, as a cross-check on the cases where it agrees with the RFC. It was
// not wrapped because its faults sit in its core rather than its edges: it
// rejects a whole file for one bad line, compiles wildcard rules into
// unanchored regular expressions, lets the first of two equally long rules win,
// ignores `Disallow: *`, drops agent groups without rules and matches agents
// by prefix, and its tokenizer keeps no line numbers for explanations.
// See docs/robots.md for the decisions taken where the RFC leaves a choice.
package robots

import (
	"bytes"
	"math"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// MaxSize is how much of a robots.txt file is parsed (RFC 9309 2.5 asks for
// at least 500 KiB); content past it is ignored.
const MaxSize = 500 << 10

// maxCrawlDelay bounds Crawl-delay: a longer wait outlives the cached file.
const maxCrawlDelay = 24 * time.Hour

// maxCompiledAgents bounds the per-agent compile cache; a crawler uses one.
const maxCompiledAgents = 8

type mode uint8

const (
	modeParsed mode = iota
	modeAllowAll
	modeDisallowAll
)

// Rules is a parsed robots.txt file. It is safe for concurrent use. The zero
// value, like an empty file, allows everything.
type Rules struct {
	mode     mode
	reason   string // the explanation DisallowAll gives
	groups   []group
	sitemaps []string
	size     int // approximate retained bytes, for the cache's budget

	last     atomic.Pointer[agentRules]
	mu       sync.Mutex
	compiled map[string]*agentRules
}

// group is one run of user-agent lines and the members that follow them.
type group struct {
	agents     []string // lower-case product tokens; "*" for the global group
	members    []member
	crawlDelay time.Duration
	hasDelay   bool
}

type member struct {
	line  int
	allow bool
	value string // the pattern as written, trimmed
}

// AllowAll returns rules that allow everything: what an unavailable (4xx)
// robots.txt means.
func AllowAll() *Rules { return &Rules{mode: modeAllowAll} }

func disallowAll(reason string) *Rules { return &Rules{mode: modeDisallowAll, reason: reason} }

// ProductToken returns the product token of a User-Agent header value: its
// first word up to "/" ("crawlspace/0.1 (+https://x)" → "crawlspace").
func ProductToken(userAgent string) string {
	s := strings.TrimSpace(userAgent)
	if i := strings.IndexAny(s, " \t/"); i >= 0 {
		s = s[:i]
	}
	return s
}

// Parse parses a robots.txt body. It never fails: lines it cannot use are
// skipped, and only the first MaxSize bytes are read.
func Parse(data []byte) *Rules {
	if len(data) > MaxSize {
		data = data[:MaxSize]
		// A line cut by the cap could turn "Disallow: /private" into
		// "Disallow: /pri" or an Allow into a wider one; drop it.
		if i := bytes.LastIndexAny(data, "\r\n"); i >= 0 {
			data = data[:i]
		} else {
			data = nil
		}
	}
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))

	r := &Rules{size: 128}
	cur := -1         // index of the group being filled
	inAgents := false // the previous directive was a user-agent line
	lineNo := 0
	var seenSitemaps map[string]bool
	for len(data) > 0 {
		var line []byte
		i := bytes.IndexAny(data, "\r\n")
		if i < 0 {
			line, data = data, nil
		} else {
			line = data[:i]
			if data[i] == '\r' && i+1 < len(data) && data[i+1] == '\n' {
				i++
			}
			data = data[i+1:]
		}
		lineNo++

		if j := bytes.IndexByte(line, '#'); j >= 0 {
			line = line[:j]
		}
		colon := bytes.IndexByte(line, ':')
		if colon < 0 {
			continue
		}
		key := bytes.TrimSpace(line[:colon])
		val := bytes.TrimSpace(line[colon+1:])

		switch directiveOf(key) {
		case dUserAgent:
			if !inAgents {
				r.groups = append(r.groups, group{})
				cur = len(r.groups) - 1
				inAgents = true
			}
			tok := strings.ToLower(ProductToken(string(val)))
			r.groups[cur].agents = append(r.groups[cur].agents, tok)
			r.size += len(tok) + 16
		case dAllow, dDisallow:
			if cur < 0 {
				continue // RFC 9309 2.2.2: rules outside any group are ignored
			}
			inAgents = false
			if len(val) == 0 {
				continue // an empty pattern matches nothing
			}
			g := &r.groups[cur]
			g.members = append(g.members, member{line: lineNo, allow: directiveOf(key) == dAllow, value: string(val)})
			// The member, and once compiled for an agent its rule twice
			// (sorted and indexed) with the explanation string.
			r.size += 3*len(val) + 256
		case dCrawlDelay:
			if cur < 0 {
				continue
			}
			inAgents = false
			d, ok := parseDelay(string(val))
			if !ok {
				continue
			}
			g := &r.groups[cur]
			if !g.hasDelay || d > g.crawlDelay {
				g.crawlDelay, g.hasDelay = d, true
			}
		case dSitemap:
			if len(val) == 0 || seenSitemaps[string(val)] {
				continue
			}
			if seenSitemaps == nil {
				seenSitemaps = make(map[string]bool)
			}
			s := string(val)
			seenSitemaps[s] = true
			r.sitemaps = append(r.sitemaps, s)
			r.size += len(s) + 16
		}
	}
	return r
}

type directive uint8

const (
	dUnknown directive = iota
	dUserAgent
	dAllow
	dDisallow
	dCrawlDelay
	dSitemap
)

// directiveOf maps a key, case-insensitively, to a directive. The accepted
// misspellings are those Google's reference parser accepts, which site owners
// have come to rely on.
func directiveOf(key []byte) directive {
	switch {
	case len(key) == 0:
		return dUnknown
	case equalFoldAny(key, "user-agent", "useragent", "user agent"):
		return dUserAgent
	case equalFoldAny(key, "allow"):
		return dAllow
	case equalFoldAny(key, "disallow", "dissallow", "dissalow", "disalow", "diasllow", "disallaw"):
		return dDisallow
	case equalFoldAny(key, "crawl-delay", "crawldelay", "crawl delay"):
		return dCrawlDelay
	case equalFoldAny(key, "sitemap", "site-map"):
		return dSitemap
	}
	return dUnknown
}

func equalFoldAny(b []byte, words ...string) bool {
	for _, w := range words {
		if len(b) == len(w) && bytes.EqualFold(b, []byte(w)) {
			return true
		}
	}
	return false
}

func parseDelay(s string) (time.Duration, bool) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(f) || f < 0 {
		return 0, false
	}
	if f >= maxCrawlDelay.Seconds() {
		return maxCrawlDelay, true
	}
	return time.Duration(f * float64(time.Second)), true
}

// Sitemaps returns the Sitemap URLs the file names, in order, without
// duplicates. They are global: not tied to any group.
func (r *Rules) Sitemaps() []string {
	if r == nil {
		return nil
	}
	return r.sitemaps
}

// CrawlDelay returns the Crawl-delay of the group that applies to agent, 0 if
// it sets none. Where several groups merge, the longest delay wins.
func (r *Rules) CrawlDelay(agent string) time.Duration {
	if r == nil || r.mode != modeParsed {
		return 0
	}
	return r.forAgent(agent).crawlDelay
}

// Allowed reports whether agent may fetch pathAndQuery.
func (r *Rules) Allowed(agent, pathAndQuery string) bool {
	ok, _ := r.Test(agent, pathAndQuery)
	return ok
}

// Test reports whether agent (a User-Agent value or its product token) may
// fetch pathAndQuery (a request URI such as "/a/b?c=d"), and the rule that
// decided as "robots.txt:LINE: Directive: pattern", "" when no rule matched.
func (r *Rules) Test(agent, pathAndQuery string) (allowed bool, line string) {
	if r == nil || isRobotsTxt(pathAndQuery) {
		return true, "" // RFC 9309 2.2.2: /robots.txt is implicitly allowed
	}
	switch r.mode {
	case modeAllowAll:
		return true, ""
	case modeDisallowAll:
		return false, r.reason
	}
	a := r.forAgent(agent)
	if len(a.rules) == 0 {
		return true, ""
	}
	if pathAndQuery == "" {
		pathAndQuery = "/"
	}
	if ru := a.decide(canonicalPath(pathAndQuery)); ru != nil {
		return ru.allow, ru.line
	}
	return true, ""
}

func isRobotsTxt(p string) bool {
	const name = "/robots.txt"
	return strings.HasPrefix(p, name) && (len(p) == len(name) || p[len(name)] == '?')
}
