package urlnorm

import (
	"strconv"
	"strings"
)

// Numeric hosts. Browsers, and the resolvers of most systems, read a host
// that ends in a number as an IPv4 address, in any of inet_aton's forms:
// one to four parts, each decimal, octal with a leading 0 or hexadecimal
// with 0x, the last filling the bytes left (2130706433, 0x7f.1, 0177.0.0.1
// and 127.1 are all 127.0.0.1). The WHATWG URL standard writes such a host
// as its dotted address, and so does Normalize: the address rules and the
// private-network check then see the IP, and nothing asks DNS for a name
// that is no name. A host that ends in a number but is no address (1.2.3.4.5,
// 256.1.1.1, example.123) is invalid, as in browsers.

// mayEndInNumber reports whether a host whose last byte is c can end in a
// number: a digit, a hexadecimal letter, x, or a trailing dot.
func mayEndInNumber(c byte) bool {
	return c <= '9' || c <= 'f' && c >= 'a' || c == 'x'
}

// endsInNumber reports whether a lower-case host's last label, ignoring one
// trailing dot, is a number: all decimal digits, or 0x and hexadecimal
// digits. It is the WHATWG "ends in a number" check.
func endsInNumber(host string) bool {
	if strings.HasSuffix(host, ".") {
		if len(host) == 1 {
			return false
		}
		host = host[:len(host)-1]
	}
	last := host[strings.LastIndexByte(host, '.')+1:]
	if last == "" {
		return false
	}
	if allDigits(last, 10) {
		return true
	}
	return strings.HasPrefix(last, "0x") && allDigits(last[2:], 16)
}

func allDigits(s string, base int) bool {
	for i := 0; i < len(s); i++ {
		if digit(s[i]) >= base {
			return false
		}
	}
	return true
}

// digit is the value of a lower-case digit, 99 for anything else.
func digit(c byte) int {
	switch {
	case '0' <= c && c <= '9':
		return int(c - '0')
	case 'a' <= c && c <= 'f':
		return int(c-'a') + 10
	}
	return 99
}

// parseIPv4 reads a host that ends in a number as an IPv4 address (the
// WHATWG IPv4 parser); ok is false when it is none.
func parseIPv4(host string) (addr uint32, ok bool) {
	host = strings.TrimSuffix(host, ".")
	var parts [4]uint64
	n := 0
	for rest := host; ; {
		part, after, more := strings.Cut(rest, ".")
		if n == len(parts) {
			return 0, false
		}
		v, ok := ipv4Number(part)
		if !ok {
			return 0, false
		}
		parts[n] = v
		n++
		if !more {
			break
		}
		rest = after
	}
	for _, v := range parts[:n-1] {
		if v > 255 {
			return 0, false
		}
	}
	last := parts[n-1]
	if last >= 1<<(8*(5-n)) {
		return 0, false
	}
	addr = uint32(last)
	for i, v := range parts[:n-1] {
		addr |= uint32(v) << (8 * (3 - i))
	}
	return addr, true
}

// ipv4Number reads one part: 0x hexadecimal, 0 octal, else decimal. Values
// past 32 bits are refused early, which no valid part reaches.
func ipv4Number(s string) (uint64, bool) {
	if s == "" {
		return 0, false
	}
	base := 10
	switch {
	case len(s) >= 2 && s[0] == '0' && s[1] == 'x':
		s, base = s[2:], 16
	case len(s) >= 2 && s[0] == '0':
		s, base = s[1:], 8
	}
	var v uint64
	for i := 0; i < len(s); i++ {
		d := digit(s[i])
		if d >= base {
			return 0, false
		}
		v = v*uint64(base) + uint64(d)
		if v > 1<<32 {
			return 0, false
		}
	}
	return v, true
}

// appendIPv4 writes addr in dotted form.
func appendIPv4(buf []byte, addr uint32) []byte {
	for i := 3; i >= 0; i-- {
		buf = strconv.AppendUint(buf, uint64(addr>>(8*i)&0xff), 10)
		if i > 0 {
			buf = append(buf, '.')
		}
	}
	return buf
}
