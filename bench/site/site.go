package main

import (
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// Site is a deterministic synthetic web site of N pages. Every page is a
// pure function of the seed and its number, so the server renders pages on
// the fly instead of holding hundreds of megabytes of HTML, and two servers
// with the same seed serve byte-identical sites.
//
// Page numbers map to URLs of four kinds, so crawlers meet the URL shapes of
// real sites: 0 is "/", 1..len(sections) are section indexes ("/news/"),
// numbers ending in 3 are catalogue items ("/catalog/item?id=N"), numbers
// ending in 7 are listing pages ("/news/list?page=N&sort=asc") and the rest
// are articles ("/news/quarterly-report-warehouse-N.html"). Every URL a page
// links to is written in one canonical spelling (sorted query parameters, no
// default port, no dot segments), so every crawler, whatever its URL
// normalisation, sees the same N unique pages.
//
// Page i links to pages 8i+1 … 8i+8 and to its parent (i-1)/8, so every
// page is reachable from "/" within about log8(N)+1 hops.
type Site struct {
	N    int
	Seed uint64
	// paras is a pool of paragraphs shared by all pages; each page picks its
	// own sequence, so pages differ without generating text per request.
	paras [][]byte
}

// A page has about 80 links (these plus 20 of navigation, breadcrumbs,
// fragments and the parent, and 5 off-site or mailto) and 28–32 KB of HTML,
// as on a typical corporate or documentation page.
const (
	fanout        = 8
	inTextLinks   = 34
	relatedLinks  = 8
	footerLinks   = 8
	minPageBytes  = 28 << 10
	pageBytesSpan = 4 << 10
)

var sections = []string{"news", "products", "services", "support", "research", "careers",
	"about", "events", "blog", "docs", "partners", "investors"}

var sectionTitles = []string{"News", "Products", "Services", "Support", "Research", "Careers",
	"About us", "Events", "Blog", "Documentation", "Partners", "Investors"}

var authors = []string{"Anna Keller", "Bruno Díaz", "Chen Wei", "Dara O'Neill", "Emil Sørensen",
	"Fatima Haddad", "Grace Okafor", "Hiro Tanaka", "Ines Moreau", "Jonas Berg", "Kavya Rao",
	"Liam Novak", "Maya Cohen", "Nils Lindqvist", "Olga Petrova", "Pedro Alves"}

var footerTitles = []string{"About the company", "Contact", "Privacy policy", "Terms of use",
	"Accessibility", "Sitemap", "Press", "Jobs"}

var offsite = []string{"https://www.example.com/partners/", "https://example.org/standards/",
	"https://github.com/example/"}

var words = strings.Fields(`account acquisition agreement analysis annual application approach
archive assessment asset audit balance benchmark board branch budget building business
campaign capacity capital carbon catalogue certificate channel chapter client climate cloud
committee community company compliance component conference contract control cooperation
corporate council coverage customer dashboard database decision delivery demand department
deployment design development device digital director distribution division document domain
economy education efficiency employee energy engineering enterprise environment equipment
estimate evaluation event evidence exchange executive expansion experience expert export
facility factory feature finance forecast framework freight function funding governance
growth guidance guideline hardware harbour health holding housing impact implementation
import incident income industry information infrastructure initiative innovation insight
inspection installation insurance integration interface inventory investment invoice issue
journal knowledge laboratory language launch leadership licence logistics maintenance
management manufacturing market measure media meeting member method metric migration
milestone model module monitoring network notice objective office operation opportunity
order organisation outcome output overview owner package partner partnership payment
performance permit pipeline plan platform policy portfolio practice pricing principle
priority procedure process procurement product production profile programme project
property proposal protection protocol provider publication quality quarter rate recovery
region register regulation release report request requirement research resource response
result retail revenue review risk roadmap safety schedule scheme science security segment
service session settlement shipment software solution source specification staff standard
statement storage strategy subscription supplier supply support survey sustainability system
target team technology tender terminal testing timeline tool training transaction transfer
transport trend update upgrade usage utility value vendor version vessel warehouse warranty
website workflow workshop café naïve Zürich Malmö São Kraków résumé`)

// asciiWords is the number of leading words of words without accents.
var asciiWords = func() int {
	for k, w := range words {
		for _, c := range w {
			if c > 0x7f {
				return k
			}
		}
	}
	return len(words)
}()

// NewSite builds the site of n pages (at least 1) for seed.
func NewSite(n int, seed uint64) *Site {
	s := &Site{N: max(n, 1), Seed: seed}
	r := rand.New(rand.NewPCG(seed, 0x5eed_5eed_5eed))
	s.paras = make([][]byte, 512)
	for k := range s.paras {
		var p []byte
		nw := 50 + r.IntN(80)
		start := true
		for w := range nw {
			word := words[r.IntN(len(words))]
			if start {
				p = append(p, strings.ToUpper(word[:1])...)
				p = append(p, word[1:]...)
				start = false
			} else {
				p = append(p, word...)
			}
			switch {
			case w == nw-1:
				p = append(p, '.')
			case r.IntN(12) == 0:
				p = append(p, ". "...)
				start = true
			case r.IntN(15) == 0:
				p = append(p, ", "...)
			default:
				p = append(p, ' ')
			}
		}
		s.paras[k] = p
	}
	return s
}

// mix is splitmix64: a cheap, well-spread hash of (seed, i, salt) for the
// per-page choices that URLs depend on (section, slug), so a URL can be
// recomputed without a random generator.
func (s *Site) mix(i int, salt uint64) uint64 {
	z := s.Seed ^ (uint64(i)*0x9e3779b97f4a7c15 + salt)
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return z ^ (z >> 31)
}

func (s *Site) section(i int) int {
	if i >= 1 && i <= len(sections) {
		return i - 1
	}
	return int(s.mix(i, 1) % uint64(len(sections)))
}

// slugWords are the words of page i's slug and the start of its title.
func (s *Site) slugWords(i int) (w [4]string, n int) {
	h := s.mix(i, 2)
	n = 2 + int(h%3)
	for k := range n {
		h = h*6364136223846793005 + 1442695040888963407
		w[k] = words[(h>>33)%uint64(asciiWords)] // slugs stay unescaped
	}
	return w, n
}

// AppendURL appends the path and query of page i, the one spelling every
// link to it uses.
func (s *Site) AppendURL(b []byte, i int) []byte {
	switch {
	case i == 0:
		return append(b, '/')
	case i <= len(sections):
		b = append(b, '/')
		b = append(b, sections[i-1]...)
		return append(b, '/')
	case i%10 == 3:
		b = append(b, "/catalog/item?id="...)
		return strconv.AppendInt(b, int64(i), 10)
	case i%10 == 7:
		b = append(b, '/')
		b = append(b, sections[s.section(i)]...)
		b = append(b, "/list?page="...)
		b = strconv.AppendInt(b, int64(i), 10)
		return append(b, "&sort=asc"...)
	}
	b = append(b, '/')
	b = append(b, sections[s.section(i)]...)
	b = append(b, '/')
	w, n := s.slugWords(i)
	for k := range n {
		b = append(b, w[k]...)
		b = append(b, '-')
	}
	b = strconv.AppendInt(b, int64(i), 10)
	return append(b, ".html"...)
}

// appendHref appends URL(j) escaped for an attribute value: "&" becomes
// "&amp;", as in well-formed HTML.
func (s *Site) appendHref(b []byte, j int) []byte {
	var tmp [128]byte
	for _, c := range s.AppendURL(tmp[:0], j) {
		if c == '&' {
			b = append(b, "&amp;"...)
		} else {
			b = append(b, c)
		}
	}
	return b
}

// URL is AppendURL as a string.
func (s *Site) URL(i int) string { return string(s.AppendURL(nil, i)) }

// Lookup finds the page whose canonical URL is path?query. Any other
// spelling of a page's URL is not a page, as on a site with strict routing.
func (s *Site) Lookup(path, rawQuery string) (int, bool) {
	i := -1
	switch {
	case path == "/" && rawQuery == "":
		return 0, true
	case path == "/catalog/item":
		i = atoiAfter(rawQuery, "id=", "")
	case strings.HasSuffix(path, "/list"):
		i = atoiAfter(rawQuery, "page=", "&sort=asc")
	case strings.HasSuffix(path, ".html") && rawQuery == "":
		if dash := strings.LastIndexByte(path, '-'); dash >= 0 {
			i = atoiAfter(path[dash+1:], "", ".html")
		}
	case rawQuery == "" && len(path) > 2 && path[len(path)-1] == '/':
		for k, name := range sections {
			if path[1:len(path)-1] == name {
				i = k + 1
			}
		}
	}
	if i < 0 || i >= s.N {
		return 0, false
	}
	var buf [128]byte
	u := s.AppendURL(buf[:0], i)
	want := path
	if rawQuery != "" {
		want = path + "?" + rawQuery
	}
	return i, string(u) == want
}

// atoiAfter parses the decimal number between prefix and suffix that make
// up the whole of s, or returns -1.
func atoiAfter(s, prefix, suffix string) int {
	if !strings.HasPrefix(s, prefix) || !strings.HasSuffix(s, suffix) || len(s) <= len(prefix)+len(suffix) {
		return -1
	}
	digits := s[len(prefix) : len(s)-len(suffix)]
	if len(digits) > 9 || (len(digits) > 1 && digits[0] == '0') {
		return -1
	}
	n, err := strconv.Atoi(digits)
	if err != nil || n < 0 {
		return -1
	}
	return n
}

// ETag is page i's strong validator.
func (s *Site) ETag(i int) string {
	return `"` + strconv.FormatUint(s.mix(i, 3), 36) + `"`
}

var epoch = time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)

// LastModified is page i's modification time, whole seconds within 2024.
func (s *Site) LastModified(i int) time.Time {
	return epoch.Add(time.Duration(s.mix(i, 4)%(365*24*3600)) * time.Second)
}

func (s *Site) title(b []byte, i int) []byte {
	switch {
	case i == 0:
		return append(b, "Welcome to Example Corp"...)
	case i <= len(sections):
		return append(b, sectionTitles[i-1]...)
	}
	w, n := s.slugWords(i)
	for k := range n {
		if k == 0 {
			b = append(b, strings.ToUpper(w[k][:1])...)
			b = append(b, w[k][1:]...)
		} else {
			b = append(b, ' ')
			b = append(b, w[k]...)
		}
	}
	switch i % 10 {
	case 3:
		b = append(b, " (item "...)
		b = strconv.AppendInt(b, int64(i), 10)
		b = append(b, ')')
	case 7:
		b = append(b, ", page "...)
		b = strconv.AppendInt(b, int64(i), 10)
	}
	return b
}

// link appends <a href="URL(j)#frag">text</a>, or nothing when j is not a
// page of this site (small sites lack high numbers); it reports whether it
// wrote a link.
func (s *Site) link(b []byte, j int, frag, text string) ([]byte, bool) {
	if j < 0 || j >= s.N {
		return b, false
	}
	b = append(b, `<a href="`...)
	b = s.appendHref(b, j)
	if frag != "" {
		b = append(b, '#')
		b = append(b, frag...)
	}
	b = append(b, `">`...)
	if text == "" {
		b = s.title(b, j)
	} else {
		b = append(b, text...)
	}
	return append(b, "</a>"...), true
}

func appendWords(b []byte, r *rand.Rand, n int, sep string) []byte {
	for k := range n {
		if k > 0 {
			b = append(b, sep...)
		}
		b = append(b, words[r.IntN(len(words))]...)
	}
	return b
}

// AppendPage appends the HTML of page i as served on host.
func (s *Site) AppendPage(b []byte, i int, host string) []byte {
	r := rand.New(rand.NewPCG(s.Seed, uint64(i)))
	start := len(b)
	sec := s.section(i)
	mod := s.LastModified(i)
	b = append(b, "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"...)
	b = append(b, "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>"...)
	b = s.title(b, i)
	b = append(b, " | Example Corp</title>\n<meta name=\"description\" content=\""...)
	descStart := len(b)
	b = appendWords(b, r, 18+r.IntN(10), " ")
	desc := string(b[descStart:])
	b = append(b, "\">\n<meta name=\"keywords\" content=\""...)
	b = appendWords(b, r, 4+r.IntN(4), ", ")
	author := authors[r.IntN(len(authors))]
	b = append(b, "\">\n<meta name=\"author\" content=\""...)
	b = append(b, author...)
	b = append(b, "\">\n<meta property=\"og:title\" content=\""...)
	b = s.title(b, i)
	b = append(b, "\">\n<meta property=\"og:type\" content=\"article\">\n<meta property=\"og:url\" content=\"http://"...)
	b = append(b, host...)
	b = s.appendHref(b, i)
	b = append(b, "\">\n<meta property=\"og:description\" content=\""...)
	b = append(b, desc...)
	b = append(b, "\">\n<meta property=\"og:site_name\" content=\"Example Corp\">\n<meta name=\"DC.title\" content=\""...)
	b = s.title(b, i)
	b = append(b, "\">\n<meta name=\"DC.creator\" content=\""...)
	b = append(b, author...)
	b = append(b, "\">\n<meta name=\"DC.date\" content=\""...)
	b = mod.AppendFormat(b, "2006-01-02")
	b = append(b, "\">\n<meta name=\"DC.language\" content=\"en\">\n<meta name=\"DC.subject\" content=\""...)
	b = append(b, sectionTitles[sec]...)
	b = append(b, "\">\n<link rel=\"canonical\" href=\""...)
	b = s.appendHref(b, i)
	b = append(b, "\">\n<style>body{font-family:sans-serif;margin:0 auto;max-width:60em}"+
		"header,footer{background:#f4f4f4;padding:1em}nav ul{list-style:none;display:flex;gap:1em}"+
		"aside{float:right;width:18em}.meta{color:#666}</style>\n</head>\n<body>\n"...)

	// Header and navigation: the same on every page, as on real sites.
	b = append(b, "<header class=\"site-header\">\n<a class=\"logo\" href=\"/\">Example Corp</a>\n"...)
	b = append(b, "<a class=\"skip\" href=\"#content\">Skip to content</a>\n<nav><ul>\n<li><a href=\"/\">Home</a></li>\n"...)
	for k := range sections {
		b = append(b, "<li>"...)
		b, _ = s.link(b, k+1, "", sectionTitles[k])
		b = append(b, "</li>\n"...)
	}
	b = append(b, "</ul></nav>\n</header>\n<div class=\"breadcrumbs\"><a href=\"/\">Home</a> › "...)
	if i > 0 {
		b, _ = s.link(b, sec+1, "", sectionTitles[sec])
		b = append(b, " › "...)
	}
	b = s.title(b, i)
	b = append(b, "</div>\n<main id=\"content\">\n<aside>\n<h3>Related</h3>\n<ul>\n"...)
	for k := range relatedLinks {
		frag := ""
		if k%3 == 2 {
			frag = "comments"
		}
		b = append(b, "<li>"...)
		b, _ = s.link(b, r.IntN(s.N), frag, "")
		b = append(b, "</li>\n"...)
	}
	b = append(b, "</ul>\n<h3>In this section</h3>\n<ul>\n<li>"...)
	b, _ = s.link(b, (i-1)/fanout, "", "Up one level")
	b = append(b, "</li>\n"...)
	for k := 1; k <= fanout; k++ {
		b = append(b, "<li>"...)
		b, _ = s.link(b, i*fanout+k, "", "")
		b = append(b, "</li>\n"...)
	}
	b = append(b, "</ul>\n</aside>\n<article>\n<h1>"...)
	b = s.title(b, i)
	b = append(b, "</h1>\n<p class=\"meta\">By "...)
	b = append(b, author...)
	b = append(b, ", <time datetime=\""...)
	b = mod.AppendFormat(b, time.RFC3339)
	b = append(b, "\">"...)
	b = mod.AppendFormat(b, "2 January 2006")
	b = append(b, "</time></p>\n"...)

	// Body text up to the page's size, with in-text links spread over it.
	target := minPageBytes + r.IntN(pageBytesSpan)
	const tail = 2600 // bytes the footer and closing tags take
	links, heading := 0, 0
	for p := 0; len(b)-start < target-tail || links < inTextLinks; p++ {
		if p%4 == 0 {
			heading++
			b = append(b, "<h2 id=\"section-"...)
			b = strconv.AppendInt(b, int64(heading), 10)
			b = append(b, "\">"...)
			b = appendWords(b, r, 2+r.IntN(3), " ")
			b = append(b, "</h2>\n"...)
		}
		b = append(b, "<p>"...)
		b = append(b, s.paras[r.IntN(len(s.paras))]...)
		for range 1 + r.IntN(2) {
			if links >= inTextLinks {
				break
			}
			links++
			frag := ""
			if r.IntN(6) == 0 {
				frag = "section-" + strconv.Itoa(1+r.IntN(4))
			}
			b = append(b, " See "...)
			var ok bool
			if b, ok = s.link(b, r.IntN(s.N), frag, ""); ok {
				b = append(b, '.')
			}
		}
		b = append(b, "</p>\n"...)
		if len(b)-start > 4*target {
			break // a guard against a tiny site that has no pages to link to
		}
	}
	b = append(b, "<p><a href=\"#top\">Back to top</a> · <a href=\"#comments\">Comments</a> · Read more at "...)
	o := r.IntN(len(offsite))
	b = append(b, "<a href=\""...)
	b = append(b, offsite[o]...)
	b = appendWords(b, r, 1, "")
	b = append(b, "\">our partner</a>.</p>\n</article>\n</main>\n<footer>\n<ul>\n"...)
	for k := range footerLinks {
		b = append(b, "<li>"...)
		b, _ = s.link(b, len(sections)+1+k, "", footerTitles[k])
		b = append(b, "</li>\n"...)
	}
	b = append(b, "</ul>\n<p>Follow us: "...)
	for k, u := range offsite {
		if k > 0 {
			b = append(b, " · "...)
		}
		b = append(b, "<a href=\""...)
		b = append(b, u...)
		b = append(b, "\">"...)
		b = append(b, u[8:]...)
		b = append(b, "</a>"...)
	}
	b = append(b, "</p>\n<p>Questions? <a href=\"mailto:web@example.com\">web@example.com</a></p>\n"...)
	b = append(b, "<p>© 2024 Example Corp. All rights reserved.</p>\n</footer>\n</body>\n</html>\n"...)
	return b
}
