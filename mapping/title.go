package mapping

import (
	"net/url"
	"strings"
)

// urlTitle is the title of last resort: the last path segment made
// readable, "getting_started-guide.html" giving "getting started guide".
// Index pages ("index.html", "default.aspx") are named after their folder,
// and a site root after its host.
func urlTitle(u *url.URL) string {
	segs := strings.Split(u.EscapedPath(), "/")
	for i := len(segs) - 1; i >= 0; i-- {
		s := segs[i]
		if s == "" {
			continue
		}
		if dec, err := url.PathUnescape(s); err == nil {
			s = dec
		}
		s = dropExtension(s)
		if l := strings.ToLower(s); l == "index" || l == "default" {
			continue
		}
		s = strings.Map(func(r rune) rune {
			if r == '-' || r == '_' {
				return ' '
			}
			return r
		}, s)
		var t textBuf
		if s = t.normalize([]byte(s)); s != "" {
			return s
		}
	}
	if h := u.Hostname(); h != "" {
		return h
	}
	return u.Host
}

// dropExtension removes a file extension: a final dot followed by one to
// five letters and digits, at least one a letter, so "v1.2" keeps its
// number.
func dropExtension(s string) string {
	i := strings.LastIndexByte(s, '.')
	if i <= 0 || len(s)-i-1 < 1 || len(s)-i-1 > 5 {
		return s
	}
	letter := false
	for _, c := range []byte(s[i+1:]) {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z':
			letter = true
		case '0' <= c && c <= '9':
		default:
			return s
		}
	}
	if !letter {
		return s
	}
	return s[:i]
}
