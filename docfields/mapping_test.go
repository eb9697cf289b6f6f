package docfields

import (
	"encoding/json"
	"strings"
	"testing"
)

func props(t *testing.T, m map[string]any) map[string]any {
	t.Helper()
	mappings, ok := m["mappings"].(map[string]any)
	if !ok {
		t.Fatal("no mappings")
	}
	if mappings["dynamic"] != "strict" {
		t.Errorf("dynamic = %v, want strict", mappings["dynamic"])
	}
	return mappings["properties"].(map[string]any)
}

func TestMappingTypesEveryDocumentField(t *testing.T) {
	p := props(t, Mapping(nil))
	want := map[string]string{
		"doc_url": "keyword", "doc_host": "keyword", "doc_path": "keyword", "doc_title": "text",
		"doc_description": "text", "doc_keywords": "keyword", "doc_author": "keyword",
		"doc_language": "keyword", "doc_language_detected": "boolean", "doc_headings": "text", "doc_body": "text",
		"doc_content_type": "keyword", "doc_modified": "date", "doc_crawled": "date",
		"doc_content_hash": "keyword", "doc_source": "keyword", "doc_depth": "integer", "doc_pages": "integer", "doc_duplicates": "keyword",
		"doc_nosnippet": "boolean", "doc_noarchive": "boolean", "doc_passages": "nested",
	}
	for f, typ := range want {
		got, _ := p[f].(map[string]any)
		if got["type"] != typ {
			t.Errorf("%s: type %v, want %s", f, got["type"], typ)
		}
	}
	if len(p) != len(want) {
		t.Errorf("%d properties, want %d", len(p), len(want))
	}
	title := p["doc_title"].(map[string]any)["fields"].(map[string]any)["keyword"].(map[string]any)
	if title["type"] != "keyword" {
		t.Errorf("doc_title has no keyword sub-field for sorting: %v", title)
	}
}

// Every field of the Go type must be in the mapping, or a strict index
// rejects every document.
func TestMappingCoversEveryJSONKeyOfADocument(t *testing.T) {
	d := sampleDocument()
	d.Extra = map[string][]string{"extra_category": {"x"}}
	b, _ := json.Marshal(d)
	var keys map[string]any
	if err := json.Unmarshal(b, &keys); err != nil {
		t.Fatal(err)
	}
	p := props(t, Mapping(map[string]string{"extra_category": ""}))
	for k := range keys {
		if _, ok := p[k]; !ok {
			t.Errorf("JSON key %s is not mapped", k)
		}
	}
}

func TestMappingDeclaresExtraFieldsWithTheirTypesAndKeywordByDefault(t *testing.T) {
	p := props(t, Mapping(map[string]string{"extra_category": "", "extra_published": "date", "extra_n": "LONG", "extra_bad": "geo_shape"}))
	for f, typ := range map[string]string{"extra_category": "keyword", "extra_published": "date", "extra_n": "long", "extra_bad": "keyword"} {
		if got := p[f].(map[string]any)["type"]; got != typ {
			t.Errorf("%s: type %v, want %s", f, got, typ)
		}
	}
}

func TestMappingUsesOnlyTheStandardAnalyzer(t *testing.T) {
	b, _ := json.Marshal(Mapping(map[string]string{"extra_a": "text"}))
	s := string(b)
	if strings.Contains(s, `"analyzer"`) || strings.Contains(s, `"analysis"`) || strings.Contains(s, "normalizer") {
		t.Errorf("mapping depends on analysis components:\n%s", s)
	}
}

func TestPhysicalIndexChangesWithExtraFieldsAndIsStable(t *testing.T) {
	a := PhysicalIndex("web", map[string]string{"extra_a": "", "extra_b": "date"})
	b := PhysicalIndex("web", map[string]string{"extra_b": "date", "extra_a": "keyword"})
	if a != b {
		t.Errorf("same mapping, different names: %s %s", a, b)
	}
	if !strings.HasPrefix(a, "web-v4-") || len(a) != len("web-v4-")+8 {
		t.Errorf("name %q has not the form web-v4-<8 hex>", a)
	}
	for _, other := range []map[string]string{nil, {"extra_a": ""}, {"extra_a": "", "extra_b": "long"}} {
		if PhysicalIndex("web", other) == a {
			t.Errorf("extra fields %v give the same index as a different set", other)
		}
	}
}

func TestValidExtraName(t *testing.T) {
	for name, want := range map[string]bool{
		"extra_category": true, "extra_a1_b": true, "extra_": false, "category": false,
		"extra_Category": false, "extra_a.b": false, "extra_a-b": false, "doc_title": false,
	} {
		if got := ValidExtraName(name); got != want {
			t.Errorf("ValidExtraName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestIndexOptionsReachTheMappingAndNameTheIndexOnlyWhenSet(t *testing.T) {
	if PhysicalIndexWith("web", nil, IndexOptions{}) != PhysicalIndex("web", nil) {
		t.Error("an index without options is named differently than before options existed: upgrading would rebuild it")
	}
	opts := IndexOptions{
		RefreshInterval: "30000ms",
		Analysis:        map[string]map[string]any{"analyzer": {"folded": map[string]any{"type": "custom", "tokenizer": "standard"}}},
		Analyzers:       map[string]string{"doc_body": "folded"},
		Subfields:       map[string]map[string]map[string]any{"doc_title": {"folded": {"type": "text", "analyzer": "folded"}}},
	}
	m := MappingWith(nil, opts)
	settings := m["settings"].(map[string]any)
	props := m["mappings"].(map[string]any)["properties"].(map[string]any)
	if settings["index.refresh_interval"] != "30000ms" || settings["index.analysis"] == nil {
		t.Errorf("settings %v", settings)
	}
	if props["doc_body"].(map[string]any)["analyzer"] != "folded" {
		t.Errorf("doc_body %v, want the folded analyzer", props["doc_body"])
	}
	fields := props["doc_title"].(map[string]any)["fields"].(map[string]any)
	if fields["folded"] == nil || fields["keyword"] == nil {
		t.Errorf("doc_title sub-fields %v, want folded beside keyword", fields)
	}
	if Mapping(nil)["mappings"].(map[string]any)["properties"].(map[string]any)["doc_title"].(map[string]any)["fields"].(map[string]any)["folded"] != nil {
		t.Error("options leaked into a later mapping without them")
	}
	base := PhysicalIndexWith("web", nil, opts)
	for name, change := range map[string]func(*IndexOptions){
		"refresh":  func(o *IndexOptions) { o.RefreshInterval = "1000ms" },
		"analyzer": func(o *IndexOptions) { o.Analyzers = map[string]string{"doc_title": "folded"} },
		"subfield": func(o *IndexOptions) { o.Subfields = nil },
		"vectors": func(o *IndexOptions) {
			o.Vectors = &Vectors{Dims: 384, Similarity: "cosine", Fingerprint: "all-minilm-l6-v2"}
		},
	} {
		o := opts
		change(&o)
		if PhysicalIndexWith("web", nil, o) == base {
			t.Errorf("changing %s kept the physical index name", name)
		}
	}
	if PhysicalIndexWith("web", nil, opts) != base {
		t.Error("the same options named two indices")
	}
}

// The passages are nested objects whose vector exists only in an index with
// embeddings, and whose hash and URL are kept for reading back, not searched.
func TestPassagesAreNestedAndCarryAVectorOnlyWithEmbeddings(t *testing.T) {
	plain := props(t, Mapping(nil))[PassagesField].(map[string]any)
	if plain["type"] != "nested" {
		t.Fatalf("doc_passages %v, want nested", plain)
	}
	if _, ok := plain["properties"].(map[string]any)["vector"]; ok {
		t.Error("an index without embeddings maps a vector it cannot fill")
	}
	v := &Vectors{Dims: 384, Similarity: "cosine", IndexType: "int8_hnsw", Fingerprint: "m"}
	with := props(t, MappingWith(nil, IndexOptions{Vectors: v}))[PassagesField].(map[string]any)["properties"].(map[string]any)
	vec := with["vector"].(map[string]any)
	if vec["type"] != "dense_vector" || vec["dims"] != 384 || vec["similarity"] != "cosine" ||
		vec["index_options"].(map[string]any)["type"] != "int8_hnsw" {
		t.Errorf("vector %v", vec)
	}
	if h := with["hash"].(map[string]any); h["index"] != false || h["doc_values"] != false {
		t.Errorf("hash %v is indexed: it is only read back", h)
	}
	fp := *v
	fp.Fingerprint = "other"
	if PhysicalIndexWith("web", nil, IndexOptions{Vectors: v}) == PhysicalIndexWith("web", nil, IndexOptions{Vectors: &fp}) {
		t.Error("another fingerprint (model, passage size) kept the index: its passages would not be embedded again")
	}
	if IsField(PassagesField) {
		t.Error("doc_passages is an object, not a field sub-fields may be added to")
	}
}
