package urlnorm

import (
	"net/netip"
	"strconv"
	"unicode/utf8"

	"golang.org/x/net/idna"
)

// appendAuthority writes the host and port of an authority, user
// information dropped (credentials belong in the config's auth, not in
// URLs that are logged, stored and indexed).
func appendAuthority[S text](dst []byte, scheme string, auth S) ([]byte, error) {
	if i := lastIndexByte(auth, '@'); i >= 0 {
		auth = auth[i+1:]
	}
	// The port starts at the first colon outside an IPv6 literal's brackets.
	end, inBrackets := 0, false
	for ; end < len(auth); end++ {
		c := auth[end]
		if c == ':' && !inBrackets {
			break
		}
		if c == '[' {
			inBrackets = true
		} else if c == ']' {
			inBrackets = false
		}
	}
	if end == 0 {
		return dst, ErrHost
	}
	dst, err := appendHost(dst, auth[:end])
	if err != nil || end == len(auth) {
		return dst, err
	}
	return appendPort(dst, scheme, auth[end+1:])
}

// appendPort writes ":port" unless it is empty or the scheme's default;
// leading zeros go.
func appendPort[S text](dst []byte, scheme string, port S) ([]byte, error) {
	for len(port) > 1 && port[0] == '0' {
		port = port[1:]
	}
	if len(port) == 0 {
		return dst, nil
	}
	if len(port) > 5 {
		return dst, ErrPort
	}
	v := 0
	for i := 0; i < len(port); i++ {
		c := port[i]
		if c < '0' || c > '9' {
			return dst, ErrPort
		}
		v = v*10 + int(c-'0')
	}
	if v > 65535 {
		return dst, ErrPort
	}
	if d := DefaultPort(scheme); d != "" && len(port) == len(d) && hasPrefix(port, d) {
		return dst, nil
	}
	dst = append(dst, ':')
	return append(dst, port...), nil
}

// DefaultPort is the port a URL of scheme uses when it names none, or "".
func DefaultPort(scheme string) string {
	switch scheme {
	case "http", "ws":
		return "80"
	case "https", "wss":
		return "443"
	case "ftp":
		return "21"
	}
	return ""
}

// appendHost writes a host as the standard's host parser makes it: an
// IPv6 literal compressed, a name lower-case and in punycode (IDNA, UTS
// 46), a name that ends in a number as its dotted IPv4 address (ipv4.go).
func appendHost[S text](dst []byte, host S) ([]byte, error) {
	if host[0] == '[' {
		if host[len(host)-1] != ']' {
			return dst, ErrHost
		}
		addr, err := netip.ParseAddr(string(host[1 : len(host)-1]))
		if err != nil || !addr.Is6() || addr.Zone() != "" {
			return dst, ErrHost
		}
		dst = append(dst, '[')
		dst = appendIPv6(dst, addr)
		return append(dst, ']'), nil
	}
	start := len(dst)
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c >= 0x80 || c == '%' {
			name, ok := domainToASCII(host)
			if !ok {
				return dst[:start], ErrHost
			}
			dst = append(dst[:start], name...)
			break
		}
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		dst = append(dst, c)
	}
	for _, c := range dst[start:] {
		if forbiddenInDomain[c] {
			return dst[:start], ErrHost
		}
	}
	// Most hosts end in a letter past f: one comparison rules them out.
	if h := dst[start:]; mayEndInNumber(h[len(h)-1]) && endsInNumber(string(h)) {
		addr, ok := parseIPv4(string(h))
		if !ok {
			return dst[:start], ErrHost
		}
		if dotted := appendIPv4(dst[len(dst):], addr); string(dotted) != string(h) {
			dst = append(dst[:start], dotted...)
		}
	}
	return dst, nil
}

// idnaProfile is UTS 46 processing as the URL Standard's "domain to
// ASCII" asks for it (CheckHyphens, UseSTD3ASCIIRules and VerifyDnsLength
// false; CheckBidi and CheckJoiners true; nontransitional).
var idnaProfile = idna.New(
	idna.MapForLookup(),
	idna.BidiRule(),
	idna.Transitional(false),
	idna.StrictDomainName(false),
	idna.CheckHyphens(false),
	idna.CheckJoiners(true),
	idna.VerifyDNSLength(false),
)

func ascii(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

// domainToASCII percent-decodes a host and maps it to ASCII; ok is false
// for a name IDNA refuses or bytes that are not UTF-8.
func domainToASCII[S text](host S) (string, bool) {
	var stack [128]byte
	b := stack[:0]
	for i := 0; i < len(host); i++ {
		c := host[i]
		if c == '%' && i+2 < len(host) {
			hi, ok1 := unhex(host[i+1])
			lo, ok2 := unhex(host[i+2])
			if ok1 && ok2 {
				b = append(b, hi<<4|lo)
				i += 2
				continue
			}
		}
		b = append(b, c)
	}
	if ascii(b) {
		// As in browsers, an ASCII name is only lower-cased, its punycode
		// labels ("xn--") taken as written.
		return lowerASCII(b), true
	}
	if !utf8.Valid(b) {
		return "", false
	}
	name, err := idnaProfile.ToASCII(string(b))
	if err != nil || name == "" {
		return "", false
	}
	return name, true
}

// forbiddenInDomain marks the standard's forbidden domain code points that
// are ASCII (what IDNA left is ASCII), and "`", "{" and "}", which the
// standard allows but Go's net/url, through which every request goes,
// refuses in a host: such a link could never be requested.
var forbiddenInDomain = func() (t [256]bool) {
	for c := 0; c < 0x20; c++ {
		t[c] = true
	}
	for _, c := range []byte(" #%/:<>?@[\\]^|\x7f`{}") {
		t[c] = true
	}
	return t
}()

// appendIPv6 writes an IPv6 address as the standard serialises it: hex
// pieces without leading zeros, the first longest run of two or more zero
// pieces as "::", and never a dotted IPv4 tail.
func appendIPv6(dst []byte, addr netip.Addr) []byte {
	a := addr.As16()
	var pieces [8]uint16
	for i := range pieces {
		pieces[i] = uint16(a[2*i])<<8 | uint16(a[2*i+1])
	}
	runStart, runLen := -1, 1
	for i := 0; i < 8; {
		if pieces[i] != 0 {
			i++
			continue
		}
		j := i
		for j < 8 && pieces[j] == 0 {
			j++
		}
		if j-i > runLen {
			runStart, runLen = i, j-i
		}
		i = j
	}
	for i := 0; i < 8; i++ {
		if i == runStart {
			dst = append(dst, "::"...)
			i += runLen - 1
			continue
		}
		if i > 0 && i != runStart+runLen {
			dst = append(dst, ':')
		}
		dst = strconv.AppendUint(dst, uint64(pieces[i]), 16)
	}
	return dst
}
