package docfields

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"maps"
	"sort"
	"strconv"
	"strings"
)

// MappingVersion is bumped whenever Mapping changes for the doc_* fields, so
// PhysicalIndex names a fresh index and the sink reindexes behind the alias
// instead of writing documents an old mapping would misread.
const MappingVersion = 4

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
	return MappingWith(extra, IndexOptions{})
}

// IndexOptions are what a team sets on its index beyond the fields: they go
// into the body that creates the physical index, and into its name, so a
// change builds a new index behind the alias (the rebuild any new physical
// index gets) instead of leaving the old one as it was.
type IndexOptions struct {
	// RefreshInterval is index.refresh_interval as Elasticsearch writes
	// it ("30s"); empty leaves Elasticsearch's default.
	RefreshInterval string `json:"refresh_interval,omitempty"`
	// Analysis is index.analysis: section (analyzer, tokenizer, filter,
	// char_filter, normalizer) → name → definition.
	Analysis map[string]map[string]any `json:"analysis,omitempty"`
	// Analyzers names the analyzer of text fields (TextFields, or extra
	// fields of type text): field → analyzer.
	Analyzers map[string]string `json:"analyzers,omitempty"`
	// Subfields adds multi-fields: field → sub-field name → its mapping.
	// They index what crawlspace writes differently and never change what
	// it writes, so the strict mapping holds.
	Subfields map[string]map[string]map[string]any `json:"subfields,omitempty"`
	// Vectors gives the passages their vectors: the index of a crawl
	// with embeddings. nil for one without.
	Vectors *Vectors `json:"vectors,omitempty"`
}

func (o IndexOptions) empty() bool {
	return o.RefreshInterval == "" && len(o.Analysis) == 0 && len(o.Analyzers) == 0 && len(o.Subfields) == 0 &&
		o.Vectors == nil
}

// TextFields are the doc_* fields of type text, the ones an analyzer may be
// set on.
var TextFields = []string{"doc_title", "doc_description", "doc_headings", "doc_body"}

// BuiltinSubfields are the sub-fields the mapping defines itself, by field;
// a team's sub-field may not take their names.
var BuiltinSubfields = map[string][]string{
	"doc_title": {"keyword"}, "doc_path": {"text"}, "doc_keywords": {"text"}, "doc_author": {"text"},
}

// IsField reports whether name is a doc_* field of the mapping that holds
// values: doc_passages, an object of fields, is not one.
func IsField(name string) bool {
	_, ok := Mapping(nil)["mappings"].(map[string]any)["properties"].(map[string]any)[name]
	return ok && name != PassagesField
}

// MappingWith is Mapping with a team's index options applied.
func MappingWith(extra map[string]string, opts IndexOptions) map[string]any {
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
		"doc_description":       map[string]any{"type": "text"},
		"doc_keywords":          withText(kw()),
		"doc_author":            withText(kw()),
		"doc_language":          map[string]any{"type": "keyword", "ignore_above": 64},
		"doc_language_detected": map[string]any{"type": "boolean"},
		"doc_headings":          map[string]any{"type": "text"},
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
		"doc_duplicates":   kw(),
		"doc_nosnippet":    map[string]any{"type": "boolean"},
		"doc_noarchive":    map[string]any{"type": "boolean"},
		PassagesField:      passagesMapping(opts.Vectors),
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
	settings := map[string]any{
		// A page's meta tag that does not parse as the number or date
		// an extra field is declared as must cost that value, not the
		// document.
		"index.mapping.ignore_malformed": true,
	}
	if opts.RefreshInterval != "" {
		settings["index.refresh_interval"] = opts.RefreshInterval
	}
	if len(opts.Analysis) > 0 {
		analysis := make(map[string]any, len(opts.Analysis))
		for section, defs := range opts.Analysis {
			analysis[section] = defs
		}
		settings["index.analysis"] = analysis
	}
	for field, analyzer := range opts.Analyzers {
		if m, ok := props[field].(map[string]any); ok {
			m["analyzer"] = analyzer
		}
	}
	for field, subs := range opts.Subfields {
		m, ok := props[field].(map[string]any)
		if !ok {
			continue
		}
		fields, _ := m["fields"].(map[string]any)
		if fields == nil {
			fields = map[string]any{}
		} else {
			fields = maps.Clone(fields)
		}
		for name, def := range subs {
			if _, builtin := fields[name]; !builtin {
				fields[name] = maps.Clone(def)
			}
		}
		m["fields"] = fields
	}
	return map[string]any{
		"settings": settings,
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
	return PhysicalIndexWith(alias, extra, IndexOptions{})
}

// PhysicalIndexWith is PhysicalIndex for an index with a team's options.
// Without any the name is PhysicalIndex's, so upgrading to a crawlspace
// that knows options does not rebuild an index that uses none.
func PhysicalIndexWith(alias string, extra map[string]string, opts IndexOptions) string {
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
	if !opts.empty() {
		// encoding/json writes map keys sorted: the same options always
		// give the same bytes.
		raw, err := json.Marshal(opts)
		if err != nil {
			panic("docfields: index options are not JSON: " + err.Error()) // config.Load gives only YAML scalars, maps and lists
		}
		h.Write([]byte("options="))
		h.Write(raw)
	}
	sum := h.Sum(nil)
	return alias + "-v" + strconv.Itoa(MappingVersion) + "-" + hex.EncodeToString(sum[:4])
}
