package docfields

import (
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"
)

// The JSON form of a Document is its Elasticsearch _source: the doc_* fields
// of the struct tags, and every Extra entry as a top-level extra_* key.
//
// Extra fields are always written as arrays of strings, even with one value.
// Elasticsearch treats an array and a single value alike for every field
// type, coerces the strings of a numeric, date or boolean field, and a search
// front end reading _source then sees one shape per field whatever a page
// held. Empty extra fields are left out. UnmarshalJSON also accepts a single
// value, and numbers and booleans, so documents written by hand read back.

// MarshalJSON encodes the document as its Elasticsearch _source.
func (d Document) MarshalJSON() ([]byte, error) {
	return d.AppendJSON(make([]byte, 0, d.Size())), nil
}

// AppendJSON appends the document's _source to b, for a bulk body built in
// one buffer. Keys come in a fixed order, extra fields sorted by name, so the
// same document always encodes to the same bytes.
func (d *Document) AppendJSON(b []byte) []byte {
	b = append(b, `{"doc_url":`...)
	b = appendString(b, d.URL)
	b = append(b, `,"doc_host":`...)
	b = appendString(b, d.Host)
	b = append(b, `,"doc_path":`...)
	b = appendString(b, d.Path)
	b = append(b, `,"doc_title":`...)
	b = appendString(b, d.Title)
	if d.Description != "" {
		b = append(b, `,"doc_description":`...)
		b = appendString(b, d.Description)
	}
	if len(d.Keywords) > 0 {
		b = append(b, `,"doc_keywords":`...)
		b = appendStrings(b, d.Keywords)
	}
	if len(d.Author) > 0 {
		b = append(b, `,"doc_author":`...)
		b = appendStrings(b, d.Author)
	}
	if d.Language != "" {
		b = append(b, `,"doc_language":`...)
		b = appendString(b, d.Language)
	}
	if d.LanguageDetected {
		b = append(b, `,"doc_language_detected":true`...)
	}
	if len(d.Headings) > 0 {
		b = append(b, `,"doc_headings":`...)
		b = appendStrings(b, d.Headings)
	}
	b = append(b, `,"doc_body":`...)
	b = appendString(b, d.Body)
	b = append(b, `,"doc_content_type":`...)
	b = appendString(b, d.ContentType)
	if !d.Modified.IsZero() {
		b = append(b, `,"doc_modified":`...)
		b = appendTime(b, d.Modified)
	}
	if !d.Crawled.IsZero() {
		b = append(b, `,"doc_crawled":`...)
		b = appendTime(b, d.Crawled)
	}
	b = append(b, `,"doc_content_hash":`...)
	b = appendString(b, d.ContentHash)
	b = append(b, `,"doc_source":`...)
	b = appendString(b, d.Source)
	b = append(b, `,"doc_depth":`...)
	b = strconv.AppendInt(b, int64(d.Depth), 10)
	if d.Pages > 0 {
		b = append(b, `,"doc_pages":`...)
		b = strconv.AppendInt(b, int64(d.Pages), 10)
	}
	if len(d.Duplicates) > 0 {
		b = append(b, `,"doc_duplicates":`...)
		b = appendStrings(b, d.Duplicates)
	}
	b = append(b, `,"doc_nosnippet":`...)
	b = strconv.AppendBool(b, d.NoSnippet)
	b = append(b, `,"doc_noarchive":`...)
	b = strconv.AppendBool(b, d.NoArchive)
	if len(d.Passages) > 0 {
		b = appendPassages(b, d.Passages)
	}
	if len(d.Extra) > 0 {
		// A small stack array avoids an allocation for the usual handful
		// of extra fields.
		var buf [16]string
		names := buf[:0]
		for name, vals := range d.Extra {
			if len(vals) > 0 {
				names = append(names, name)
			}
		}
		slices.Sort(names)
		for _, name := range names {
			b = append(b, ',')
			b = appendString(b, name)
			b = append(b, ':')
			b = appendStrings(b, d.Extra[name])
		}
	}
	return append(b, '}')
}

// AppendGroupJSON appends the fields that change when the group of
// duplicates a document stands for changes, its list and its hash, as the
// partial document of an update (the rest of the document stays as
// indexed): {"doc_duplicates":[…],"doc_content_hash":"…"}, the list null
// when empty, so the field is taken out as an index without it leaves it
// out.
func AppendGroupJSON(b []byte, duplicates []string, hash string) []byte {
	b = append(b, `{"doc_duplicates":`...)
	if len(duplicates) == 0 {
		b = append(b, "null"...)
	} else {
		b = appendStrings(b, duplicates)
	}
	b = append(b, `,"doc_content_hash":`...)
	b = appendString(b, hash)
	return append(b, '}')
}

// Size is about the bytes the document holds, and its JSON's length: what
// a document waiting for the sink costs in memory.
func (d *Document) Size() int {
	n := 320 + len(d.URL) + len(d.Host) + len(d.Path) + len(d.Title) + len(d.Description) +
		len(d.Body) + len(d.Language) + len(d.ContentType) + len(d.ContentHash) + len(d.Source)
	for _, ss := range [][]string{d.Keywords, d.Author, d.Headings, d.Duplicates} {
		for _, s := range ss {
			n += len(s) + 3
		}
	}
	for k, vs := range d.Extra {
		n += len(k) + 6
		for _, v := range vs {
			n += len(v) + 3
		}
	}
	n += passagesSize(d.Passages)
	for i := range d.Sections {
		n += 48 + len(d.Sections[i].Title) + len(d.Sections[i].Anchor)
	}
	return n + n/16
}

// UnmarshalJSON reads a document written by MarshalJSON (or by hand):
// extra_* keys fill Extra, other unknown keys are ignored.
func (d *Document) UnmarshalJSON(data []byte) error {
	// plain has the fields and tags but not the methods, so this does not
	// recurse.
	type plain Document
	var p plain
	if err := json.Unmarshal(data, &p); err != nil {
		return err
	}
	var all map[string]json.RawMessage
	if err := json.Unmarshal(data, &all); err != nil {
		return err
	}
	for key, raw := range all {
		if !strings.HasPrefix(key, ExtraPrefix) {
			continue
		}
		vals, err := extraValues(raw)
		if err != nil {
			return fmt.Errorf("docfields: field %s: %w", key, err)
		}
		if len(vals) == 0 {
			continue
		}
		if p.Extra == nil {
			p.Extra = make(map[string][]string)
		}
		p.Extra[key] = vals
	}
	*d = Document(p)
	return nil
}

// extraValues reads an extra field: a string, number or boolean, an array of
// those, or null.
func extraValues(raw json.RawMessage) ([]string, error) {
	var items []json.RawMessage
	if t := strings.TrimSpace(string(raw)); strings.HasPrefix(t, "[") {
		if err := json.Unmarshal(raw, &items); err != nil {
			return nil, err
		}
	} else {
		items = []json.RawMessage{raw}
	}
	vals := make([]string, 0, len(items))
	for _, it := range items {
		t := strings.TrimSpace(string(it))
		switch {
		case t == "null":
			continue
		case strings.HasPrefix(t, `"`):
			var s string
			if err := json.Unmarshal(it, &s); err != nil {
				return nil, err
			}
			vals = append(vals, s)
		case strings.HasPrefix(t, "{") || strings.HasPrefix(t, "["):
			return nil, fmt.Errorf("nested value %s", t)
		default:
			// A number or boolean keeps its JSON text.
			var v any
			if err := json.Unmarshal(it, &v); err != nil {
				return nil, err
			}
			vals = append(vals, t)
		}
	}
	return vals, nil
}

func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, '"')
}

func appendStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, s)
	}
	return append(b, ']')
}

const hexDigits = "0123456789abcdef"

// appendString writes s as a JSON string. Invalid UTF-8 becomes U+FFFD, as
// encoding/json does; HTML characters are left alone because the consumer is
// Elasticsearch, not a browser.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i++
			start = i
			continue
		}
		// U+2028 and U+2029 are valid JSON but end lines in JavaScript;
		// escaping them keeps the output safe to embed, as encoding/json does.
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
