package hostile

import (
	"fmt"
	"net/http"
	"unicode/utf16"
)

// Lie serves Body with headers that need not describe it: a charset the
// bytes contradict, a Content-Encoding they are not in. Empty headers are
// not sent.
type Lie struct {
	ContentType     string
	ContentEncoding string
	Body            []byte
	Meter
}

func (l *Lie) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	cw := l.count(w)
	w.Header()["Content-Type"] = nil // no sniffed type when none is given
	if l.ContentType != "" {
		w.Header().Set("Content-Type", l.ContentType)
	}
	if l.ContentEncoding != "" {
		w.Header().Set("Content-Encoding", l.ContentEncoding)
	}
	w.Header().Set("Content-Length", fmt.Sprint(len(l.Body)))
	cw.Write(l.Body)
}

// UTF16 encodes s as UTF-16 in the byte order named (big-endian when
// bigEndian), with its byte order mark first when bom is set.
func UTF16(s string, bigEndian, bom bool) []byte {
	units := utf16.Encode([]rune(s))
	if bom {
		units = append([]uint16{0xfeff}, units...)
	}
	out := make([]byte, 0, 2*len(units))
	for _, u := range units {
		if bigEndian {
			out = append(out, byte(u>>8), byte(u))
		} else {
			out = append(out, byte(u), byte(u>>8))
		}
	}
	return out
}
