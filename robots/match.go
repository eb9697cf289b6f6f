package robots

import (
	"slices"
	"strconv"
	"strings"
	"time"
)

// agentRules is the group that applies to one agent, compiled for matching.
type agentRules struct {
	agent      string
	rules      []rule // most specific first; the first match decides
	crawlDelay time.Duration

	// Large groups are also indexed by the octet after the leading "/",
	// which most patterns fix: a path is then tried against the rules
	// for its own octet plus the few that start with a wildcard.
	keyed   []rule  // patterns fixing prefix[1], by that octet, then as rules
	bounds  []int32 // keyed[bounds[c]:bounds[c+1]] fix octet c; nil: no index
	general []rule  // patterns with no second octet fixed, as rules
}

// indexMin is the group size from which the octet index pays for itself.
const indexMin = 16

// rule is a compiled Allow or Disallow pattern: literal segments, in the
// canonical encoding of canonicalPath, separated by "*" wildcards.
type rule struct {
	prefix   string   // what the path must start with
	rest     []string // segments after each "*", found left to right
	anchored bool     // the pattern ended in "$"
	allow    bool
	lineNo   int
	length   int    // octets of the canonical pattern, "*" and "$" included
	line     string // "robots.txt:LINE: Directive: pattern" for explanations
}

// forAgent returns the compiled group for agent, compiling it on first use.
// Test runs per URL, so the common case is one atomic load.
func (r *Rules) forAgent(agent string) *agentRules {
	if a := r.last.Load(); a != nil && a.agent == agent {
		return a
	}
	r.mu.Lock()
	a := r.compiled[agent]
	if a == nil {
		a = r.compile(agent)
		if r.compiled == nil {
			r.compiled = make(map[string]*agentRules)
		}
		if len(r.compiled) < maxCompiledAgents {
			r.compiled[agent] = a
		}
	}
	r.mu.Unlock()
	r.last.Store(a)
	return a
}

// compile merges every group naming agent's product token (RFC 9309 2.2.1:
// case-insensitive, equal tokens merge), else every "*" group; with neither,
// no rule applies.
func (r *Rules) compile(agent string) *agentRules {
	tok := strings.ToLower(ProductToken(agent))
	pick := func(want string) []*group {
		var gs []*group
		for i := range r.groups {
			if want != "" && slices.Contains(r.groups[i].agents, want) {
				gs = append(gs, &r.groups[i])
			}
		}
		return gs
	}
	gs := pick(tok)
	if len(gs) == 0 || tok == "*" {
		gs = pick("*")
	}
	a := &agentRules{agent: agent}
	for _, g := range gs {
		if g.hasDelay && g.crawlDelay > a.crawlDelay {
			a.crawlDelay = g.crawlDelay
		}
		for _, m := range g.members {
			a.rules = append(a.rules, compileRule(m))
		}
	}
	// Most specific first, so that the first match is the answer.
	slices.SortFunc(a.rules, func(x, y rule) int {
		if x.beats(&y) {
			return -1
		}
		if y.beats(&x) {
			return 1
		}
		return 0
	})
	if len(a.rules) >= indexMin {
		a.index()
	}
	return a
}

func (a *agentRules) index() {
	count := make([]int32, 257)
	for i := range a.rules {
		if p := a.rules[i].prefix; len(p) >= 2 {
			count[int(p[1])+1]++
		} else {
			a.general = append(a.general, a.rules[i])
		}
	}
	for c := 1; c < 257; c++ {
		count[c] += count[c-1]
	}
	a.bounds = count
	a.keyed = make([]rule, count[256])
	next := slices.Clone(count[:256])
	for i := range a.rules { // stable: each bucket keeps the rules' order
		if p := a.rules[i].prefix; len(p) >= 2 {
			a.keyed[next[p[1]]] = a.rules[i]
			next[p[1]]++
		}
	}
}

// decide returns the most specific rule matching the canonical path p, nil
// if none does.
func (a *agentRules) decide(p string) *rule {
	if a.bounds == nil {
		for i := range a.rules {
			if a.rules[i].match(p) {
				return &a.rules[i]
			}
		}
		return nil
	}
	var best *rule
	if len(p) >= 2 {
		c := p[1]
		for i := a.bounds[c]; i < a.bounds[int(c)+1]; i++ {
			if a.keyed[i].match(p) {
				best = &a.keyed[i]
				break
			}
		}
	}
	for i := range a.general {
		g := &a.general[i]
		if best != nil && !g.beats(best) {
			break // the rest are no more specific
		}
		if g.match(p) {
			return g
		}
	}
	return best
}

// beats reports whether x takes precedence over y when both match: the
// longer pattern, at equal length Allow (RFC 9309 2.2.2), then the earlier
// line, which only changes the explanation.
func (x *rule) beats(y *rule) bool {
	if x.length != y.length {
		return x.length > y.length
	}
	if x.allow != y.allow {
		return x.allow
	}
	return x.lineNo < y.lineNo
}

func compileRule(m member) rule {
	name := "Disallow"
	if m.allow {
		name = "Allow"
	}
	ru := rule{allow: m.allow, lineNo: m.line, line: "robots.txt:" + strconv.Itoa(m.line) + ": " + name + ": " + m.value}
	p := m.value
	if p[0] != '/' && p[0] != '*' {
		// A pattern must start with "/" to match anything; one without it
		// can only mean the owner left the slash out.
		p = "/" + p
	}
	if strings.HasSuffix(p, "$") {
		ru.anchored = true
		p = p[:len(p)-1]
	}
	var segs []string
	var buf []byte
	inQuery := false
	for {
		i := strings.IndexByte(p, '*')
		lit := p
		if i >= 0 {
			lit = p[:i]
		}
		buf, inQuery = appendCanonical(buf[:0], lit, inQuery)
		segs = append(segs, string(buf))
		ru.length += len(buf)
		if i < 0 {
			break
		}
		ru.length++
		p = p[i+1:]
	}
	if ru.anchored {
		ru.length++
	}
	ru.prefix, ru.rest = segs[0], segs[1:]
	return ru
}

func (ru *rule) match(p string) bool {
	if !strings.HasPrefix(p, ru.prefix) {
		return false
	}
	if len(ru.rest) == 0 {
		return !ru.anchored || len(p) == len(ru.prefix)
	}
	p = p[len(ru.prefix):]
	last := len(ru.rest) - 1
	// With "*" as the only operator, taking each segment at its leftmost
	// occurrence leaves the most room for the rest: no backtracking needed.
	for _, s := range ru.rest[:last] {
		i := strings.Index(p, s)
		if i < 0 {
			return false
		}
		p = p[i+len(s):]
	}
	if ru.anchored {
		return strings.HasSuffix(p, ru.rest[last])
	}
	return strings.Contains(p, ru.rest[last])
}

// Byte classes for the canonical encoding shared by patterns and paths.
const (
	cLiteral  = iota // unreserved and equivalent to its escape: kept literal
	cEscape          // must be percent-encoded: always written %XX
	cSubDelim        // reserved sub-delimiter: kept as it came, literal or %XX
	cSlash           // "/" and "?": an escape stays escaped in the path part
)

var class = func() (t [256]uint8) {
	for i := range t {
		t[i] = cEscape
	}
	for _, c := range "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~" {
		t[c] = cLiteral
	}
	// ":" "@" "[" "]" delimit nothing inside a path or query, and "*" "$"
	// must match their escapes (RFC 9309 2.2.3: "%2A" in a pattern matches
	// a literal "*" in the URI).
	for _, c := range ":@[]*$" {
		t[c] = cLiteral
	}
	for _, c := range "!&'()+,;=" {
		t[c] = cSubDelim
	}
	t['/'], t['?'] = cSlash, cSlash
	return t
}()

// canonicalPath returns p in the canonical encoding, without allocating when
// p is already canonical, as crawler-normalised URLs usually are.
func canonicalPath(p string) string {
	for i := 0; i < len(p); i++ {
		if p[i] == '%' || class[p[i]] == cEscape {
			buf, _ := appendCanonical(make([]byte, 0, len(p)+8), p, false)
			return string(buf)
		}
	}
	return p
}

// appendCanonical appends s in the canonical encoding both sides of a match
// use (RFC 9309 2.2.2): escapes of unreserved characters decoded; non-ASCII,
// controls and unsafe characters escaped, with upper-case hex; "/" and "?"
// kept distinct from %2F and %3F in the path (they delimit it) but not in the
// query, where "https://x" and "https%3A%2F%2Fx" are the same value; other
// reserved characters left as they came. inQuery carries across calls.
func appendCanonical(dst []byte, s string, inQuery bool) ([]byte, bool) {
	for i := 0; i < len(s); i++ {
		b, escaped := s[i], false
		if b == '%' && i+2 < len(s) && isHex(s[i+1]) && isHex(s[i+2]) {
			b, escaped = unhex(s[i+1])<<4|unhex(s[i+2]), true
			i += 2
		}
		switch class[b] {
		case cLiteral:
			dst = append(dst, b)
		case cSubDelim:
			if escaped {
				dst = appendEscape(dst, b)
			} else {
				dst = append(dst, b)
			}
		case cSlash:
			if escaped && !inQuery {
				dst = appendEscape(dst, b)
			} else {
				dst = append(dst, b)
				if b == '?' && !escaped {
					inQuery = true
				}
			}
		default:
			dst = appendEscape(dst, b)
		}
	}
	return dst, inQuery
}

func appendEscape(dst []byte, b byte) []byte {
	const hex = "0123456789ABCDEF"
	return append(dst, '%', hex[b>>4], hex[b&15])
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
