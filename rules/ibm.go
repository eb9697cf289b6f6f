package rules

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net/netip"
	"strconv"
	"strings"

	"golang.org/x/net/idna"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// IBM Watson Content Analytics style rules: "allow|forbid domain|prefix|address
// TARGET". Within a type the first matching rule decides; the types are
// independent, and a URL no rule of a type matches is allowed by that type.

type domainRule struct {
	allow  bool
	chunks []string // the host pattern split at "*"
	port   string   // "" for every port
}

type prefixRule struct {
	allow  bool
	chunks []string // the URL pattern split at "*"
}

type addrRule struct {
	allow      bool
	any        bool // an all-zero netmask: every address of either family
	v4         bool
	addr, mask [2]uint64
}

// ibmRules holds one source's rules of each type, indexed so a URL is
// compared only with rules whose literal part it contains.
type ibmRules struct {
	domains  []domainRule
	domainIx radix // by the literal suffix after the last "*", reversed
	prefixes []prefixRule
	prefixIx radix // by the literal prefix before the first "*"
	addrs    []addrRule
	// refs[i] names rules[i] of the config; domains, prefixes and addrs
	// carry the index into it.
	domainAt, prefixAt, addrAt []int32
}

func (r *ibmRules) add(i int, line string) error {
	rl, err := config.ParseRuleLine(line)
	if err != nil {
		return err
	}
	switch rl.Type {
	case "domain":
		d, err := compileDomain(rl.Target)
		if err != nil {
			return err
		}
		d.allow = rl.Allow
		r.domainIx.insert(d.chunks[len(d.chunks)-1], int32(len(r.domains)))
		r.domains = append(r.domains, d)
		r.domainAt = append(r.domainAt, int32(i))
	case "prefix":
		p, err := compilePrefix(rl.Target)
		if err != nil {
			return err
		}
		p.allow = rl.Allow
		r.prefixIx.insert(p.chunks[0], int32(len(r.prefixes)))
		r.prefixes = append(r.prefixes, p)
		r.prefixAt = append(r.prefixAt, int32(i))
	case "address":
		a, err := compileAddress(rl.Target, rl.Mask)
		if err != nil {
			return err
		}
		a.allow = rl.Allow
		r.addrs = append(r.addrs, a)
		r.addrAt = append(r.addrAt, int32(i))
	}
	return nil
}

func compileDomain(t string) (domainRule, error) {
	var d domainRule
	if strings.Contains(t, "/") {
		return d, fmt.Errorf("domain %q is a URL, not a host name; use a prefix rule for URLs", t)
	}
	host := t
	if strings.HasPrefix(t, "[") {
		end := strings.IndexByte(t, ']')
		if end < 0 {
			return d, fmt.Errorf("domain %q: missing ]", t)
		}
		host, d.port = t[1:end], strings.TrimPrefix(t[end+1:], ":")
		if rest := t[end+1:]; rest != "" && rest[0] != ':' {
			return d, fmt.Errorf("domain %q: unexpected %q after ]", t, rest)
		}
	} else if i := strings.LastIndexByte(t, ':'); i >= 0 {
		host, d.port = t[:i], t[i+1:]
	}
	if d.port == "*" {
		d.port = ""
	} else if d.port != "" {
		if n, err := strconv.Atoi(d.port); err != nil || n < 1 || n > 65535 || d.port[0] == '0' {
			return d, fmt.Errorf("domain %q: port %q is not a number from 1 to 65535", t, d.port)
		}
	}
	if host == "" {
		return d, fmt.Errorf("domain %q: no host name", t)
	}
	ascii, err := asciiHostPattern(host)
	if err != nil {
		return d, fmt.Errorf("domain %q: %v", t, err)
	}
	if ascii != host {
		for i := 0; i < len(host); i++ {
			if 'A' <= host[i] && host[i] <= 'Z' {
				// Matching is case-sensitive as in the IBM seed, but every
				// URL's host is lower-cased before rules see it, so an
				// upper-case pattern would silently never match.
				return d, fmt.Errorf("domain %q: host names are matched case-sensitively against normalised (lower-case) URLs, so this never matches; write %q", t, ascii)
			}
		}
	}
	d.chunks = strings.Split(ascii, "*")
	return d, nil
}

// asciiHostPattern checks a host pattern's characters and turns
// internationalised labels into punycode, as URL normalisation does.
func asciiHostPattern(host string) (string, error) {
	labels := strings.Split(host, ".")
	for i, l := range labels {
		plain := true
		for j := 0; j < len(l); j++ {
			c := l[j]
			switch {
			case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-', c == '_', c == '*', c == ':':
			case 'A' <= c && c <= 'Z':
			case c >= 0x80:
				plain = false
			default:
				return "", fmt.Errorf("%q is not allowed in a host name", c)
			}
		}
		if plain {
			labels[i] = strings.ToLower(l)
			continue
		}
		if strings.Contains(l, "*") {
			return "", fmt.Errorf("label %q mixes a wildcard with non-ASCII letters; write it in punycode", l)
		}
		a, err := idna.Lookup.ToASCII(l)
		if err != nil {
			return "", fmt.Errorf("label %q: %v", l, err)
		}
		labels[i] = a
	}
	return strings.Join(labels, "."), nil
}

func compilePrefix(t string) (prefixRule, error) {
	var p prefixRule
	scheme, rest, ok := strings.Cut(t, "://")
	if !ok {
		if !strings.HasPrefix(t, "*") {
			return p, fmt.Errorf("prefix %q is not a URL pattern such as http://host/path/*", t)
		}
		p.chunks = escapeChunks(t)
		return p, nil
	}
	for i := 0; i < len(scheme); i++ {
		c := scheme[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c == '*' || i > 0 && ('0' <= c && c <= '9' || c == '+' || c == '-' || c == '.')) {
			return p, fmt.Errorf("prefix %q: %q is not a URL scheme", t, scheme)
		}
	}
	end := strings.IndexAny(rest, "/?")
	if end < 0 {
		end = len(rest)
	}
	authority, path := rest[:end], rest[end:]
	origin := strings.ToLower(scheme) + "://" + strings.ToLower(authority)
	if !strings.Contains(origin, "*") {
		// Spell the site the way normalised URLs do (ports, IDN, IPv6).
		u, err := urlnorm.Normalize(origin + "/")
		if err != nil {
			return p, fmt.Errorf("prefix %q: %v", t, errors.Unwrap(err))
		}
		origin = strings.TrimSuffix(u, "/")
		if authority == "" {
			origin = strings.ToLower(scheme) + "://"
		}
	}
	p.chunks = strings.Split(origin, "*")
	pc := escapeChunks(path)
	p.chunks[len(p.chunks)-1] += pc[0]
	p.chunks = append(p.chunks, pc[1:]...)
	return p, nil
}

// escapeChunks splits a pattern at "*" and normalises each literal's escapes.
func escapeChunks(s string) []string {
	chunks := strings.Split(s, "*")
	for i, c := range chunks {
		chunks[i] = urlnorm.Escape(c)
	}
	return chunks
}

func compileAddress(target, mask string) (addrRule, error) {
	var a addrRule
	strip := func(s string) string { return strings.TrimSuffix(strings.TrimPrefix(s, "["), "]") }
	target = strip(target)
	bits := -1
	if i := strings.IndexByte(target, '/'); i >= 0 {
		n, err := strconv.Atoi(target[i+1:])
		if err != nil || mask != "" {
			return a, fmt.Errorf("address %q: write a netmask after the address or a /length, not both", target)
		}
		target, bits = target[:i], n
	}
	ip, err := netip.ParseAddr(target)
	if err != nil || ip.Zone() != "" {
		return a, fmt.Errorf("address %q is not an IPv4 or IPv6 address", target)
	}
	ip = ip.Unmap()
	a.v4 = ip.Is4()
	var m netip.Addr
	switch {
	case bits >= 0:
		if bits > ip.BitLen() {
			return a, fmt.Errorf("address %s/%d: a prefix length of at most %d", ip, bits, ip.BitLen())
		}
		pfx := netip.PrefixFrom(ip, bits)
		m = maskOf(ip.BitLen(), pfx.Bits())
	case mask == "":
		m = maskOf(ip.BitLen(), ip.BitLen())
	default:
		m, err = netip.ParseAddr(strip(mask))
		if err != nil || m.Zone() != "" {
			return a, fmt.Errorf("netmask %q is not an IPv4 or IPv6 netmask", mask)
		}
		m = m.Unmap()
		if m.Is4() != ip.Is4() {
			return a, fmt.Errorf("netmask %s is IPv%s but address %s is IPv%s", m, family(m), ip, family(ip))
		}
	}
	a.addr, a.mask = words(ip), words(m)
	a.addr[0] &= a.mask[0]
	a.addr[1] &= a.mask[1]
	a.any = a.mask == [2]uint64{}
	return a, nil
}

func family(ip netip.Addr) string {
	if ip.Is4() {
		return "4"
	}
	return "6"
}

func maskOf(bitLen, ones int) netip.Addr {
	b := make([]byte, bitLen/8)
	for i := 0; i < ones; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	m, _ := netip.AddrFromSlice(b)
	return m
}

// words gives an address as two 64-bit words; IPv4 in the low word's low bits.
func words(ip netip.Addr) [2]uint64 {
	if ip.Is4() {
		b := ip.As4()
		return [2]uint64{0, uint64(binary.BigEndian.Uint32(b[:]))}
	}
	b := ip.As16()
	return [2]uint64{binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])}
}

func (a *addrRule) match(ip netip.Addr, w [2]uint64) bool {
	if a.any {
		return true
	}
	if a.v4 != ip.Is4() {
		return false
	}
	return w[0]&a.mask[0] == a.addr[0] && w[1]&a.mask[1] == a.addr[1]
}

// glob reports whether s matches the pattern chunks (the pattern split at
// "*"). The match is anchored at the start of s; with openEnd the pattern
// need only match a prefix of s (prefix rules), else all of it (domains).
// With noSlash a "*" does not match "/", so "http://h/*fs/*" is a
// top-level directory ending in fs, as the IBM seed describes it.
func glob(chunks []string, s string, openEnd, noSlash bool) bool {
	if !strings.HasPrefix(s, chunks[0]) {
		return false
	}
	s = s[len(chunks[0]):]
	if len(chunks) == 1 {
		return openEnd || s == ""
	}
	return starMatch(chunks[1:], s, openEnd, noSlash)
}

// starMatch matches "*" chunks[0] "*" chunks[1] ... against s. Taking each
// chunk at its leftmost possible place is always right, so it never
// backtracks: without noSlash, a later place only leaves less text for the
// "*" that follows; with noSlash, a chunk without "/" leaves the next gap
// bounded by the same "/" wherever it sits, and a chunk with "/" has only
// one place (its first "/" must land on the first "/" of s).
func starMatch(chunks []string, s string, openEnd, noSlash bool) bool {
	for i, c := range chunks {
		limit := len(s) // the "*" before c may span s[:limit]
		if noSlash {
			if j := strings.IndexByte(s, '/'); j >= 0 {
				limit = j
			}
		}
		if i == len(chunks)-1 && !openEnd {
			return len(s) >= len(c) && s[len(s)-len(c):] == c && len(s)-len(c) <= limit
		}
		j := strings.Index(s, c)
		if j < 0 || j > limit {
			return false
		}
		s = s[j+len(c):]
	}
	return true
}

// decideDomain returns the first domain rule matching host and port, or noMatch.
func (r *ibmRules) decideDomain(host, port string) int32 {
	if len(r.domains) == 0 {
		return noMatch
	}
	var stack [32]int32
	best := int32(noMatch)
	for _, i := range r.domainIx.collect(host, stack[:0]) {
		d := &r.domains[i]
		if i < best && (d.port == "" || d.port == port) && glob(d.chunks, host, false, false) {
			best = i
		}
	}
	return best
}

// decidePrefix returns the first prefix rule matching u, or noMatch.
func (r *ibmRules) decidePrefix(u string) int32 {
	if len(r.prefixes) == 0 {
		return noMatch
	}
	var stack [32]int32
	best := int32(noMatch)
	for _, i := range r.prefixIx.collect(u, stack[:0]) {
		if i < best && glob(r.prefixes[i].chunks, u, true, true) {
			best = i
		}
	}
	return best
}

// decideAddress returns the first address rule matching ip, or noMatch.
func (r *ibmRules) decideAddress(ip netip.Addr) int32 {
	ip = ip.Unmap()
	w := words(ip)
	for i := range r.addrs {
		if r.addrs[i].match(ip, w) {
			return int32(i)
		}
	}
	return noMatch
}
