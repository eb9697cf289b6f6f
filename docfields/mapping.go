package docfields

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strconv"
	"strings"
)

// MappingVersion is bumped whenever Mapping changes for the doc_* fields, so
// PhysicalIndex names a fresh index and the sink reindexes behind the alias
// instead of writing documents an old mapping would misread.
const MappingVersion = 2

// ExtraPrefix starts the name of every custom field.
const ExtraPrefix = "extra_"

// DefaultExtraType is the Elasticsearch type of an extra field declared
// without one.
const DefaultExtraType = "keyword"

// ExtraTypes are the Elasticsearch types an extra field may be declared with.
// They are the core field types; nothing here needs a plugin or module the
// integration-test build of Elasticsearch lacks.
var ExtraTypes = []string{
	"keyword", "text",
	"long", "integer", "short", "byte",
	"double", "float", "half_float",
	"date", "boolean",
}

// keywordIgnoreAbove keeps one oversized value (a runaway meta tag) from
// failing the whole document: Lucene rejects terms over 32766 bytes, and
// 8191 characters of up to four UTF-8 bytes each stay under that.
const keywordIgnoreAbove = 8191

// ValidExtraName reports whether name is a usable custom field name:
// "extra_" followed by lower-case ASCII letters, digits and underscores.
// Dots are refused because Elasticsearch would read them as object paths.
func ValidExtraName(name string) bool {
	rest, ok := strings.CutPrefix(name, ExtraPrefix)
	if !ok || rest == "" {
		return false
	}
	for i := 0; i < len(rest); i++ {
		c := rest[i]
		if !('a' <= c && c <= 'z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// extraType returns the Elasticsearch type for a declared extra field type:
// "" means keyword. ok is false for a type crawlspace does not support.
func extraType(declared string) (typ string, ok bool) {
	t := strings.ToLower(strings.TrimSpace(declared))
	if t == "" {
		return DefaultExtraType, true
	}
	for _, v := range ExtraTypes {
		if v == t {
			return t, true
		}
	}
	return "", false
}

// Mapping returns the body of an index-creation request: settings and
// mappings for the doc_* fields and the declared extra fields (name → type).
//
// Mappings are strict: every extra field is declared in the configuration,
// so a field Elasticsearch has never heard of is a bug that must fail loudly
// rather than grow the mapping. Only the standard analyzer is used, which
// every Elasticsearch build has. An extra field with an unsupported type is
// mapped as keyword; configuration validation reports it before a crawl.
func Mapping(extra map[string]string) map[string]any {
	kw := func() map[string]any {
		return map[string]any{"type": "keyword", "ignore_above": keywordIgnoreAbove}
	}
	withText := func(m map[string]any) map[string]any {
		m["fields"] = map[string]any{"text": map[string]any{"type": "text"}}
		return m
	}
	props := map[string]any{
		"doc_url":  map[string]any{"type": "keyword"},
		"doc_host": map[string]any{"type": "keyword"},
		"doc_path": withText(map[string]any{"type": "keyword"}),
		"doc_title": map[string]any{
			"type": "text",
			"fields": map[string]any{
				// For sorting and exact matches; long titles are
				// still searchable as text, just not sortable.
				"keyword": map[string]any{"type": "keyword", "ignore_above": 256},
			},
		},
		"doc_description": map[string]any{"type": "text"},
		"doc_keywords":    withText(kw()),
		"doc_author":      withText(kw()),
		"doc_language":    map[string]any{"type": "keyword", "ignore_above": 64},
		"doc_headings":    map[string]any{"type": "text"},
		// Offsets let the unified highlighter work from the postings, so
		// snippets of long bodies need no re-analysis and are not cut off
		// by index.highlight.max_analyzed_offset.
		"doc_body":         map[string]any{"type": "text", "index_options": "offsets"},
		"doc_content_type": map[string]any{"type": "keyword"},
		"doc_modified":     map[string]any{"type": "date"},
		"doc_crawled":      map[string]any{"type": "date"},
		"doc_content_hash": map[string]any{"type": "keyword"},
		"doc_source":       map[string]any{"type": "keyword"},
		"doc_depth":        map[string]any{"type": "integer"},
		"doc_pages":        map[string]any{"type": "integer"},
		"doc_nosnippet":    map[string]any{"type": "boolean"},
		"doc_noarchive":    map[string]any{"type": "boolean"},
	}
	declared := make(map[string]any, len(extra))
	for name, t := range extra {
		typ, ok := extraType(t)
		if !ok {
			typ = DefaultExtraType
		}
		declared[name] = typ
		if typ == "keyword" {
			props[name] = kw()
		} else {
			props[name] = map[string]any{"type": typ}
		}
	}
	return map[string]any{
		"settings": map[string]any{
			// A page's meta tag that does not parse as the number or date
			// an extra field is declared as must cost that value, not the
			// document.
			"index.mapping.ignore_malformed": true,
		},
		"mappings": map[string]any{
			"dynamic": "strict",
			"_meta": map[string]any{
				"crawlspace_mapping_version": MappingVersion,
				"extra_fields":               declared,
			},
			"properties": props,
		},
	}
}

// PhysicalIndex names the concrete index behind alias for this mapping
// version and set of extra fields, for example "web-v2-3f2a9c01". Any change
// to the mapping gives a new name, so the sink can build the new index and
// switch the alias instead of failing on a mapping conflict.
func PhysicalIndex(alias string, extra map[string]string) string {
	names := make([]string, 0, len(extra))
	for n := range extra {
		names = append(names, n)
	}
	sort.Strings(names)
	h := sha256.New()
	for _, n := range names {
		typ, ok := extraType(extra[n])
		if !ok {
			typ = DefaultExtraType
		}
		h.Write([]byte(n))
		h.Write([]byte{'='})
		h.Write([]byte(typ))
		h.Write([]byte{'\n'})
	}
	sum := h.Sum(nil)
	return alias + "-v" + strconv.Itoa(MappingVersion) + "-" + hex.EncodeToString(sum[:4])
}
