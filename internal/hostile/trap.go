package hostile

import (
	"fmt"
	"html"
	"net/http"
	"strings"
	"sync/atomic"
)

// Trap is a spider trap: every path answers 200 with an HTML page linking
// Links URLs of its own host that no other page links, and Offsite URLs of
// hosts under .invalid that no crawl space should take. The links are
// drawn from Seed and the page's path, so a page always links the same
// URLs (a second crawl finds what the first did) while a crawler that
// follows them never runs out. /robots.txt answers 404: everything is
// allowed.
type Trap struct {
	Seed    uint64
	Links   int // links to the trap's own host per page; 0 means 10
	Offsite int // links to other hosts per page

	pages atomic.Int64
}

// Pages is how many pages the trap has served (robots.txt aside).
func (t *Trap) Pages() int64 { return t.pages.Load() }

func (t *Trap) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path == "/robots.txt" {
		http.NotFound(w, r)
		return
	}
	t.pages.Add(1)
	links := t.Links
	if links <= 0 {
		links = 10
	}
	rnd := trapStream{state: t.Seed ^ trapHash(r.URL.Path)}
	var b strings.Builder
	title := html.EscapeString(r.URL.Path)
	fmt.Fprintf(&b, "<!doctype html>\n<html><head><title>Trap %s</title></head><body>\n<h1>Trap %s</h1>\n<ul>\n", title, title)
	for range links {
		fmt.Fprintf(&b, "<li><a href=\"/t/%016x\">a page</a></li>\n", rnd.next())
	}
	for range t.Offsite {
		fmt.Fprintf(&b, "<li><a href=\"http://h%016x.invalid/\">a site</a></li>\n", rnd.next())
	}
	b.WriteString("</ul>\n</body></html>\n")
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Write([]byte(b.String()))
}

// trapStream is SplitMix64: a fast, well mixed stream from one seed.
type trapStream struct{ state uint64 }

func (s *trapStream) next() uint64 {
	s.state += 0x9E3779B97F4A7C15
	z := s.state
	z = (z ^ z>>30) * 0xBF58476D1CE4E5B9
	z = (z ^ z>>27) * 0x94D049BB133111EB
	return z ^ z>>31
}

// trapHash is FNV-1a, to seed a page's stream with its path.
func trapHash(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}
