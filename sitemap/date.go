package sitemap

import (
	"strings"
	"time"
)

// parseW3C parses the W3C Datetime profile of ISO 8601 that sitemaps and
// Atom use (RFC 3339 is one of its forms):
//
//	YYYY, YYYY-MM, YYYY-MM-DD, YYYY-MM-DDThh:mmTZD, YYYY-MM-DDThh:mm:ssTZD,
//	YYYY-MM-DDThh:mm:ss.sTZD, where TZD is Z, +hh:mm or -hh:mm.
//
// It also takes what generators commonly write instead: a space or a
// lower-case t for the T, a missing zone (read as UTC), +hhmm and +hh.
// The result is in UTC. It does not allocate.
func parseW3C[T string | []byte](s T) (time.Time, bool) {
	p := dateScanner[T]{s: s}
	year := p.digits(4)
	if year < 0 {
		return time.Time{}, false
	}
	month, day := 1, 1
	var hour, min, sec, nsec, offset int
	if p.more() {
		if !p.skip('-') {
			return time.Time{}, false
		}
		if month = p.digits(2); month < 1 || month > 12 {
			return time.Time{}, false
		}
		if p.more() {
			if !p.skip('-') {
				return time.Time{}, false
			}
			day = p.digits(2)
			if day < 1 || day > daysIn(time.Month(month), year) {
				return time.Time{}, false
			}
		}
	}
	if p.more() {
		if !p.skip('T') && !p.skip('t') && !p.skip(' ') {
			return time.Time{}, false
		}
		hour = p.digits(2)
		if hour < 0 || hour > 23 || !p.skip(':') {
			return time.Time{}, false
		}
		if min = p.digits(2); min < 0 || min > 59 {
			return time.Time{}, false
		}
		if p.skip(':') {
			if sec = p.digits(2); sec < 0 || sec > 60 { // 60: a leap second
				return time.Time{}, false
			}
			if p.skip('.') || p.skip(',') {
				nsec = p.fraction()
				if nsec < 0 {
					return time.Time{}, false
				}
			}
		}
		var ok bool
		if offset, ok = p.zone(); !ok {
			return time.Time{}, false
		}
	}
	if p.more() {
		return time.Time{}, false
	}
	t := time.Date(year, time.Month(month), day, hour, min, sec, nsec, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), true
}

type dateScanner[T string | []byte] struct {
	s T
	i int
}

func (p *dateScanner[T]) more() bool { return p.i < len(p.s) }

func (p *dateScanner[T]) skip(c byte) bool {
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

// digits reads exactly n decimal digits, or returns -1.
func (p *dateScanner[T]) digits(n int) int {
	if p.i+n > len(p.s) {
		return -1
	}
	v := 0
	for j := p.i; j < p.i+n; j++ {
		c := p.s[j]
		if c < '0' || c > '9' {
			return -1
		}
		v = v*10 + int(c-'0')
	}
	p.i += n
	return v
}

// fraction reads a decimal fraction of a second as nanoseconds; digits past
// the ninth are read and dropped.
func (p *dateScanner[T]) fraction() int {
	start := p.i
	ns, scale := 0, 100000000
	for p.i < len(p.s) && '0' <= p.s[p.i] && p.s[p.i] <= '9' {
		ns += int(p.s[p.i]-'0') * scale
		scale /= 10
		p.i++
	}
	if p.i == start {
		return -1
	}
	return ns
}

// zone reads an optional time zone designator and returns its offset east
// of UTC in seconds.
func (p *dateScanner[T]) zone() (int, bool) {
	if !p.more() || p.skip('Z') || p.skip('z') {
		return 0, true
	}
	sign := 1
	switch {
	case p.skip('+'):
	case p.skip('-'):
		sign = -1
	default:
		return 0, false
	}
	h := p.digits(2)
	if h < 0 || h > 23 {
		return 0, false
	}
	m := 0
	if p.more() {
		p.skip(':')
		if m = p.digits(2); m < 0 || m > 59 {
			return 0, false
		}
	}
	return sign * (h*3600 + m*60), true
}

func daysIn(m time.Month, year int) int {
	return time.Date(year, m+1, 0, 0, 0, 0, 0, time.UTC).Day()
}

// parseRFC822 parses the dates RSS writes in pubDate: RFC 822 and RFC 1123
// ("Mon, 02 Jan 2006 15:04:05 -0700"), with their everyday variants: no
// weekday, a full weekday or month name, one-digit days, two-digit years,
// no seconds, named zones (GMT, UT, EST, ...; an unknown name is read as
// UTC), RFC 850's "02-Jan-06". Failing that it tries W3C Datetime, which
// many feeds put there instead. The result is in UTC.
func parseRFC822(s string) (time.Time, bool) {
	f := strings.Fields(s)
	if len(f) > 0 && f[0] != "" && isLetter(f[0][0]) {
		f = f[1:] // the weekday
	}
	if len(f) > 0 && strings.Count(f[0], "-") == 2 { // RFC 850: 02-Jan-06
		dmy := strings.Split(f[0], "-")
		f = append(dmy, f[1:]...)
	}
	if len(f) < 4 {
		return parseW3C(strings.TrimSpace(s))
	}
	day, ok1 := atoi(f[0], 1, 2)
	month := monthOf(f[1])
	year, ok2 := atoi(f[2], 2, 4)
	if !ok1 || month == 0 || !ok2 || len(f[2]) == 3 {
		return parseW3C(strings.TrimSpace(s))
	}
	if len(f[2]) == 2 { // RFC 822 years; RFC 2822 4.3 reads 00-49 as 20xx
		if year < 50 {
			year += 2000
		} else {
			year += 1900
		}
	}
	hms := strings.Split(f[3], ":")
	if len(hms) < 2 || len(hms) > 3 {
		return time.Time{}, false
	}
	hour, okh := atoi(hms[0], 1, 2)
	min, okm := atoi(hms[1], 2, 2)
	sec, oks := 0, true
	if len(hms) == 3 {
		sec, oks = atoi(hms[2], 2, 2)
	}
	if !okh || !okm || !oks || hour > 23 || min > 59 || sec > 60 || day < 1 || day > daysIn(month, year) {
		return time.Time{}, false
	}
	offset := 0
	if len(f) > 4 {
		var ok bool
		if offset, ok = zoneOffset(f[4]); !ok {
			return time.Time{}, false
		}
	}
	t := time.Date(year, month, day, hour, min, sec, 0, time.UTC)
	return t.Add(-time.Duration(offset) * time.Second), true
}

func isLetter(c byte) bool { return 'a' <= c|0x20 && c|0x20 <= 'z' }

// atoi parses an unsigned decimal of minLen to maxLen digits.
func atoi(s string, minLen, maxLen int) (int, bool) {
	if len(s) < minLen || len(s) > maxLen {
		return 0, false
	}
	v := 0
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, false
		}
		v = v*10 + int(s[i]-'0')
	}
	return v, true
}

var months = [...]string{"jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"}

// monthOf reads an English month name or its three-letter abbreviation.
func monthOf(s string) time.Month {
	if len(s) < 3 {
		return 0
	}
	for i, m := range months {
		if strings.EqualFold(s[:3], m) {
			return time.Month(i + 1)
		}
	}
	return 0
}

// zones are RFC 822's named zones and a few that feeds use besides.
var zones = map[string]int{
	"UT": 0, "UTC": 0, "GMT": 0, "Z": 0,
	"EST": -5, "EDT": -4, "CST": -6, "CDT": -5, "MST": -7, "MDT": -6, "PST": -8, "PDT": -7,
	"BST": 1, "CET": 1, "CEST": 2, "EET": 2, "EEST": 3, "JST": 9, "AEST": 10, "AEDT": 11,
}

// zoneOffset reads +hhmm, +hh:mm or a zone name, in seconds east of UTC.
func zoneOffset(z string) (int, bool) {
	if z[0] == '+' || z[0] == '-' {
		digits := strings.Replace(z[1:], ":", "", 1)
		if len(digits) == 2 {
			digits += "00"
		}
		v, ok := atoi(digits, 4, 4)
		if !ok || v/100 > 23 || v%100 > 59 {
			return 0, false
		}
		off := (v/100)*3600 + (v%100)*60
		if z[0] == '-' {
			off = -off
		}
		return off, true
	}
	if h, ok := zones[strings.ToUpper(z)]; ok {
		return h * 3600, true
	}
	for i := 0; i < len(z); i++ {
		if !isLetter(z[i]) {
			return 0, false
		}
	}
	return 0, true // an unknown name: UTC is at most a day off, the zero time is years off
}
