package mapping

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// metaKind is what a known metadata name fills.
type metaKind uint8

const (
	metaNone metaKind = iota
	metaTitle
	metaDescription
	metaKeywords
	metaAuthor
	metaModified
	metaLanguage
	metaRobots
)

// knownMeta lists the metadata names that fill doc_* fields. Within a kind,
// the slot is the priority: the first slot that has a usable value wins,
// whatever the order of the tags in the page. Dublin Core comes before Open
// Graph because it is written for catalogues, Open Graph for link previews.
var knownMeta = []struct {
	name string
	kind metaKind
	slot int
}{
	{"dcterms.title", metaTitle, 0},
	{"dc.title", metaTitle, 1},
	{"og:title", metaTitle, 2},
	{"description", metaDescription, 0},
	{"dcterms.description", metaDescription, 1},
	{"dc.description", metaDescription, 2},
	{"og:description", metaDescription, 3},
	{"keywords", metaKeywords, 0},
	{"author", metaAuthor, 0},
	{"dc.creator", metaAuthor, 0},
	{"dcterms.creator", metaAuthor, 0},
	{"dcterms.modified", metaModified, 0},
	{"article:modified_time", metaModified, 1},
	// Slot 0 of the language is <html lang>, slot 3 the header.
	{"dc.language", metaLanguage, 1},
	{"dcterms.language", metaLanguage, 1},
	{"robots", metaRobots, 0},
	{ownAgent, metaRobots, 0},
}

// ownAgent is crawlspace's product token for robots meta tags and headers,
// which applies whatever user agent the configuration sends.
const ownAgent = "crawlspace"

const (
	titleSlots    = 3
	descSlots     = 5 // four meta names, then structured data
	modifiedSlots = 4 // two meta names, structured data, then the Last-Modified header
	langSlots     = 4 // <html lang>, DC language, http-equiv, Content-Language
)

// metaRule is what one metadata name (lower-cased) feeds.
type metaRule struct {
	kind   metaKind
	slot   int
	extras []int // indexes into Extractor.extras
}

// dateLayouts are the date forms found in meta tags and headers, most
// common first: W3C-DTF and RFC 3339 variants, then HTTP and prose dates.
var dateLayouts = []string{
	time.RFC3339Nano,
	"2006-01-02T15:04:05Z0700",
	"2006-01-02T15:04Z07:00",
	"2006-01-02T15:04:05",
	"2006-01-02T15:04",
	"2006-01-02 15:04:05Z07:00",
	"2006-01-02 15:04:05 Z0700",
	"2006-01-02 15:04:05 -0700 MST",
	"2006-01-02 15:04:05",
	"2006-01-02 15:04",
	"2006-01-02",
	"2006-01",
	"2006",
	time.RFC1123,
	time.RFC1123Z,
	time.RFC850,
	time.ANSIC,
	time.RFC822,
	time.RFC822Z,
	"Mon, 2 Jan 2006 15:04:05 MST",
	"Mon, 2 Jan 2006 15:04:05 -0700",
	"2 January 2006",
	"2 Jan 2006",
	"January 2, 2006",
	"Jan 2, 2006",
	"2006/01/02",
	"2006.01.02",
}

// parseDate reads a date in any of dateLayouts, in UTC. A date without a
// zone is taken as UTC. Years outside 1000–9999 are refused: they are typos
// or placeholders, and Elasticsearch's default date format rejects them.
func parseDate(s string) (time.Time, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 64 {
		return time.Time{}, false
	}
	for _, l := range dateLayouts {
		if t, err := time.Parse(l, s); err == nil {
			if y := t.Year(); y < 1000 || y > 9999 {
				return time.Time{}, false
			}
			return t.UTC(), true
		}
	}
	if t, err := http.ParseTime(s); err == nil {
		return t.UTC(), true
	}
	return time.Time{}, false
}

// parseHeaderDate is parseDate for a header, which almost always holds an
// HTTP date: that form is tried first, rather than after the thirteen
// layouts before it in dateLayouts, none of which an HTTP date can match.
func parseHeaderDate(s string) (time.Time, bool) {
	if t, err := http.ParseTime(strings.TrimSpace(s)); err == nil {
		if y := t.Year(); y < 1000 || y > 9999 {
			return time.Time{}, false
		}
		return t.UTC(), true
	}
	return parseDate(s)
}

// normLanguage turns a language tag into its lower-case form ("en-GB" and
// "en_gb" both become "en-gb"); a list ("en, de") gives its first entry.
// Values that are no language tag are dropped.
func normLanguage(s string) string {
	if i := strings.IndexByte(s, ','); i >= 0 {
		s = s[:i]
	}
	s = strings.TrimSpace(s)
	if s == "" || len(s) > 35 {
		return ""
	}
	b := []byte(s)
	for i, c := range b {
		switch {
		case 'A' <= c && c <= 'Z':
			b[i] = c + 'a' - 'A'
		case c == '_':
			b[i] = '-'
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9', c == '-':
		default:
			return ""
		}
	}
	return string(b)
}

// extraValue normalises one value for an extra field of Elasticsearch type
// typ. Values that would not index as that type are dropped ("" returned),
// so one odd meta tag costs its value, not the document. Dates are written
// in RFC 3339, which Elasticsearch's default date format reads.
func extraValue(v, typ string) string {
	switch typ {
	case "keyword", "text":
		return v
	case "long", "integer", "short", "byte":
		bits := 64
		switch typ {
		case "integer":
			bits = 32
		case "short":
			bits = 16
		case "byte":
			bits = 8
		}
		if n, err := strconv.ParseInt(strings.TrimSpace(v), 10, bits); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case "double", "float", "half_float":
		if f, err := strconv.ParseFloat(strings.TrimSpace(v), 64); err == nil && !math.IsInf(f, 0) && !math.IsNaN(f) {
			return strconv.FormatFloat(f, 'g', -1, 64)
		}
	case "date":
		if t, ok := parseDate(v); ok {
			return t.Format(time.RFC3339Nano)
		}
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "yes", "on", "1":
			return "true"
		case "false", "no", "off", "0":
			return "false"
		}
	}
	return ""
}

// appendUnique appends v to list unless it is empty or already there.
func appendUnique(list []string, v string) []string {
	if v == "" {
		return list
	}
	for _, x := range list {
		if x == v {
			return list
		}
	}
	return append(list, v)
}
