package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash/fnv"
	"html"
	"math/rand/v2"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// site is the ordinary site of the soak: a home page, sections and a few hundred articles, each
// with a strong ETag and a Last-Modified, so an aged check of an unchanged page is a 304. The soak
// edits, adds and removes articles while the service crawls it; what it serves at the end is the
// index the service must hold.
//
// Every page carries a marker, "state …", that changes whenever the text a search sees changes
// (an article's revision, the related articles it lists, a section's article list), so the index
// check can tell the latest version of a page from an older one.
type site struct {
	mu       sync.Mutex
	seed     uint64
	sections int
	alive    map[int]int // article id → revision
	nextID   int
	served   map[string]validator
	statuses map[int]int // answers by status
	private  int         // requests under /private/, which robots.txt disallows

	edited, added, removed int
}

// validator is what a page was last served with: its ETag, and since when it has had it.
type validator struct {
	etag     string
	modified time.Time
}

// sitePage is one page as rendered: what the index must hold for it.
type sitePage struct {
	title  string
	marker string
	body   []byte
}

const siteRobots = "User-agent: *\nDisallow: /private/\n"

func newSite(pages int, seed uint64) *site {
	s := &site{seed: seed, sections: 10, alive: map[int]int{}, served: map[string]validator{}, statuses: map[int]int{}}
	for range max(pages-1-s.sections, 1) {
		s.alive[s.nextID] = 1
		s.nextID++
	}
	return s
}

func (s *site) articlePath(id int) string {
	return fmt.Sprintf("/s/%d/a/%d.html", id%s.sections, id)
}

// ids is the articles alive, in id order.
func (s *site) ids() []int {
	ids := make([]int, 0, len(s.alive))
	for id := range s.alive {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids
}

// render gives the page at path as it is now; false when there is none. s.mu is held.
func (s *site) render(path string) (sitePage, bool) {
	switch {
	case path == "/":
		return s.home(), true
	case strings.HasPrefix(path, "/s/"):
		rest := strings.TrimPrefix(path, "/s/")
		sec, tail, ok := strings.Cut(rest, "/")
		k, err := strconv.Atoi(sec)
		if !ok || err != nil || k < 0 || k >= s.sections || strconv.Itoa(k) != sec {
			return sitePage{}, false
		}
		if tail == "" {
			return s.section(k), true
		}
		name, ok := strings.CutPrefix(tail, "a/")
		id, err := strconv.Atoi(strings.TrimSuffix(name, ".html"))
		if !ok || err != nil || !strings.HasSuffix(name, ".html") || s.articlePath(id) != path {
			return sitePage{}, false
		}
		if _, alive := s.alive[id]; !alive {
			return sitePage{}, false
		}
		return s.article(id), true
	}
	return sitePage{}, false
}

func (s *site) home() sitePage {
	var links []string
	for k := range s.sections {
		links = append(links, link(fmt.Sprintf("/s/%d/", k), fmt.Sprintf("Section %d", k)))
	}
	// robots.txt disallows it: a request for it is a crawler ignoring robots.txt.
	links = append(links, link("/private/staff.html", "Staff only"))
	return page("Soak site home", "state home", "The home page of the soak site.", links)
}

func (s *site) section(k int) sitePage {
	var links []string
	h := fnv.New64a()
	for _, id := range s.ids() {
		if id%s.sections == k {
			links = append(links, link(s.articlePath(id), fmt.Sprintf("Article %d", id)))
			fmt.Fprintf(h, "%d,", id)
		}
	}
	links = append(links, link("/", "Home"))
	title := fmt.Sprintf("Section %d: %d articles", k, len(links)-1)
	return page(title, fmt.Sprintf("state s%d-%016x", k, h.Sum64()), "The articles of this section.", links)
}

// article links its section, the home page and the next two articles alive (by id, wrapping
// round), so removing one changes its neighbours too.
func (s *site) article(id int) sitePage {
	rev := s.alive[id]
	ids := s.ids()
	i, _ := slices.BinarySearch(ids, id)
	related := []int{ids[(i+1)%len(ids)], ids[(i+2)%len(ids)]}
	links := []string{link(fmt.Sprintf("/s/%d/", id%s.sections), "Section"), link("/", "Home")}
	for _, r := range related {
		links = append(links, link(s.articlePath(r), fmt.Sprintf("Related article %d", r)))
	}
	title := fmt.Sprintf("Article %d, revision %d", id, rev)
	marker := fmt.Sprintf("state a%dr%d-%d-%d", id, rev, related[0], related[1])
	return page(title, marker, s.prose(id, rev), links)
}

// prose is a few paragraphs of words drawn from the seed, the article and its revision.
func (s *site) prose(id, rev int) string {
	words := strings.Fields(`harbour ledger granite orchard quarterly summit lantern meadow beacon
		thistle compass archive velvet canyon parcel ember glacier saddle quorum tundra willow
		ferry mosaic pylon ribbon sorrel timber umber vessel zephyr almanac bramble cobalt`)
	r := rand.New(rand.NewPCG(s.seed, uint64(id)<<20|uint64(rev)))
	var b strings.Builder
	for p := range 3 {
		if p > 0 {
			b.WriteString("</p>\n<p>")
		}
		for w := range 40 {
			if w > 0 {
				b.WriteByte(' ')
			}
			b.WriteString(words[r.IntN(len(words))])
		}
		b.WriteByte('.')
	}
	return b.String()
}

func link(href, text string) string {
	return `<a href="` + html.EscapeString(href) + `">` + html.EscapeString(text) + `</a>`
}

func page(title, marker, text string, links []string) sitePage {
	var b strings.Builder
	b.WriteString("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</title></head>\n<body>\n<h1>")
	b.WriteString(html.EscapeString(title))
	b.WriteString("</h1>\n<p>")
	b.WriteString(text)
	b.WriteString("</p>\n<p>")
	b.WriteString(html.EscapeString(marker))
	b.WriteString("</p>\n<ul>\n")
	for _, l := range links {
		b.WriteString("<li>" + l + "</li>\n")
	}
	b.WriteString("</ul>\n</body></html>\n")
	return sitePage{title: title, marker: marker, body: []byte(b.String())}
}

func (s *site) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	path := r.URL.Path
	if path == "/robots.txt" {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Write([]byte(siteRobots))
		return
	}
	s.mu.Lock()
	if strings.HasPrefix(path, "/private/") {
		s.private++
	}
	p, ok := s.render(path)
	if !ok {
		s.statuses[http.StatusNotFound]++
		s.mu.Unlock()
		http.NotFound(w, r)
		return
	}
	v := s.validator(path, p.body)
	status := http.StatusOK
	if notModified(r, v) {
		status = http.StatusNotModified
	}
	s.statuses[status]++
	s.mu.Unlock()

	h := w.Header()
	h.Set("ETag", v.etag)
	h.Set("Last-Modified", v.modified.Format(http.TimeFormat))
	if status == http.StatusNotModified {
		w.WriteHeader(status)
		return
	}
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Length", strconv.Itoa(len(p.body)))
	w.Write(p.body)
}

// validator gives the page's ETag (a hash of its bytes) and when it last changed. Last-Modified
// moves on by at least a second with every change, so If-Modified-Since alone never takes a
// changed page for the old one. s.mu is held.
func (s *site) validator(path string, body []byte) validator {
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:10]) + `"`
	v, ok := s.served[path]
	if ok && v.etag == etag {
		return v
	}
	// The site is served to a crawler running in real time: its dates
	// are the machine's clock, as a real server's are.
	mod := time.Now().UTC().Truncate(time.Second)
	if ok && !mod.After(v.modified) {
		mod = v.modified.Add(time.Second)
	}
	v = validator{etag: etag, modified: mod}
	s.served[path] = v
	return v
}

// notModified applies RFC 9110's conditional GET: If-None-Match when sent (weak comparison),
// else If-Modified-Since.
func notModified(r *http.Request, v validator) bool {
	if inm := r.Header.Get("If-None-Match"); inm != "" {
		for t := range strings.SplitSeq(inm, ",") {
			t = strings.TrimPrefix(strings.TrimSpace(t), "W/")
			if t == "*" || t == strings.TrimPrefix(v.etag, "W/") {
				return true
			}
		}
		return false
	}
	if ims, err := http.ParseTime(r.Header.Get("If-Modified-Since")); err == nil {
		return !v.modified.After(ims)
	}
	return false
}

// change edits, adds and removes articles, chosen from r. At least ten articles stay.
func (s *site) change(r *rand.Rand, edit, add, remove int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.ids()
	for range edit {
		s.alive[ids[r.IntN(len(ids))]]++
		s.edited++
	}
	for range remove {
		if len(ids) <= 10 {
			break
		}
		i := r.IntN(len(ids))
		delete(s.alive, ids[i])
		ids = slices.Delete(ids, i, i+1)
		s.removed++
	}
	for range add {
		s.alive[s.nextID] = 1
		s.nextID++
		s.added++
	}
}

// expected is every page the site serves now, by URL: the home page, the sections and the
// articles alive, each as the index must hold it.
func (s *site) expected(base string) map[string]sitePage {
	s.mu.Lock()
	defer s.mu.Unlock()
	paths := []string{"/"}
	for k := range s.sections {
		paths = append(paths, fmt.Sprintf("/s/%d/", k))
	}
	for _, id := range s.ids() {
		paths = append(paths, s.articlePath(id))
	}
	out := make(map[string]sitePage, len(paths))
	for _, p := range paths {
		pg, _ := s.render(p)
		pg.body = nil
		out[base+p] = pg
	}
	return out
}

// siteCounts is what the site saw.
type siteCounts struct {
	Statuses               map[int]int
	Private                int
	Edited, Added, Removed int
	Articles, Pages        int
}

func (s *site) counts() siteCounts {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := make(map[int]int, len(s.statuses))
	for k, v := range s.statuses {
		st[k] = v
	}
	return siteCounts{Statuses: st, Private: s.private, Edited: s.edited, Added: s.added, Removed: s.removed,
		Articles: len(s.alive), Pages: 1 + s.sections + len(s.alive)}
}
