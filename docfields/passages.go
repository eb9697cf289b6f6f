package docfields

import (
	"math"
	"strconv"
)

// Section marks where a part of a document's body starts: a heading's
// section of a page, a PDF page or bookmark, a slide, a sheet. Passages
// are cut along them (package passage).
type Section struct {
	// Offset is the byte offset in Body where the part starts.
	Offset int
	// Level is the heading level: 1 for an h1, a top-level bookmark, a
	// slide's or a sheet's name. 0 marks a page that starts without a
	// heading of its own (a PDF page): the heading path goes on over it.
	Level int
	// Title is the heading's text ("" for a page without one).
	Title string
	// Anchor is the fragment that leads to the part on the page: the id of
	// the heading or of the section it opens, without "#"; "" for none.
	Anchor string
	// Page is the page (or slide, or sheet) the part starts, from 1; 0
	// where the format has no pages.
	Page int
}

// Passage is one piece of a document as it is embedded and searched:
// a section, or a window of a long one.
type Passage struct {
	Text string `json:"text"`
	// Headings is the heading path the passage sits under, outermost first.
	Headings []string `json:"headings,omitempty"`
	// URL leads to the passage: the document's URL with the section's
	// #anchor, or #page=N for a page of a PDF.
	URL  string `json:"url"`
	Page int    `json:"page,omitempty"`
	// Hash is over what was embedded and how (passage.Hash): a passage
	// whose hash is unchanged keeps its vector.
	Hash   string    `json:"hash"`
	Vector []float32 `json:"vector,omitempty"`
}

// PassagesField is the nested field holding a document's passages.
const PassagesField = "doc_passages"

// VectorField is the passages' dense_vector, as a kNN search names it.
const VectorField = PassagesField + ".vector"

// Vectors is the dense_vector of the passages: what the embedding model
// gives, so the index can search it.
type Vectors struct {
	Dims int `json:"dims"`
	// Similarity is Elasticsearch's: cosine, dot_product, l2_norm or
	// max_inner_product.
	Similarity string `json:"similarity"`
	// IndexType is the dense_vector's index_options type (hnsw, int8_hnsw,
	// ...); empty leaves the cluster's default.
	IndexType string `json:"index_type,omitempty"`
	// Fingerprint names what is embedded and how (the model, the passage
	// size, the prefixes): it goes into the physical index's name, so a
	// change builds a new index with every passage embedded again while
	// searches keep the old one.
	Fingerprint string `json:"fingerprint"`
}

// Similarities are the similarities a dense_vector may be mapped with.
var Similarities = []string{"cosine", "dot_product", "l2_norm", "max_inner_product"}

// VectorIndexTypes are the dense_vector index types both tested versions
// of Elasticsearch (8.19 and 9.x) know for float vectors.
var VectorIndexTypes = []string{"hnsw", "int8_hnsw", "int4_hnsw", "bbq_hnsw", "flat", "int8_flat", "int4_flat", "bbq_flat"}

// passagesMapping is the nested mapping of doc_passages; v adds the
// vector field when the index has embeddings.
func passagesMapping(v *Vectors) map[string]any {
	// A search shows the passages it found as inner hits. Read from the
	// document's _source, each costs a parse of the whole document, its
	// vectors included: ten times the time of the search itself
	// (docs/semantic.md). Stored fields and doc values are read without
	// it, so text and headings are stored and the URL has doc values.
	props := map[string]any{
		"text":     map[string]any{"type": "text", "store": true},
		"headings": map[string]any{"type": "text", "store": true},
		"url":      map[string]any{"type": "keyword", "index": false},
		"page":     map[string]any{"type": "integer"},
		// Kept for reading back, never searched.
		"hash": map[string]any{"type": "keyword", "index": false, "doc_values": false},
	}
	if v != nil {
		vec := map[string]any{"type": "dense_vector", "dims": v.Dims, "similarity": v.Similarity, "index": true}
		if v.IndexType != "" {
			vec["index_options"] = map[string]any{"type": v.IndexType}
		}
		props["vector"] = vec
	}
	return map[string]any{"type": "nested", "properties": props}
}

// appendPassages writes the passages as the doc_passages array.
func appendPassages(b []byte, ps []Passage) []byte {
	b = append(b, `,"doc_passages":[`...)
	for i := range ps {
		p := &ps[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"text":`...)
		b = appendString(b, p.Text)
		if len(p.Headings) > 0 {
			b = append(b, `,"headings":`...)
			b = appendStrings(b, p.Headings)
		}
		b = append(b, `,"url":`...)
		b = appendString(b, p.URL)
		if p.Page > 0 {
			b = append(b, `,"page":`...)
			b = strconv.AppendInt(b, int64(p.Page), 10)
		}
		b = append(b, `,"hash":`...)
		b = appendString(b, p.Hash)
		if len(p.Vector) > 0 {
			b = append(b, `,"vector":`...)
			b = AppendVector(b, p.Vector)
		}
		b = append(b, '}')
	}
	return append(b, ']')
}

// AppendVector writes a vector as a JSON array, each component in the
// fewest digits that read back as the same float32.
func AppendVector(b []byte, v []float32) []byte {
	b = append(b, '[')
	for i, f := range v {
		if i > 0 {
			b = append(b, ',')
		}
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			// JSON has no such numbers; embed.Check refuses such vectors
			// before they get here.
			f = 0
		}
		b = strconv.AppendFloat(b, float64(f), 'g', -1, 32)
	}
	return append(b, ']')
}

func passagesSize(ps []Passage) int {
	n := 0
	for i := range ps {
		p := &ps[i]
		n += 64 + len(p.Text) + len(p.URL) + len(p.Hash) + 12*len(p.Vector)
		for _, h := range p.Headings {
			n += len(h) + 3
		}
	}
	return n
}
