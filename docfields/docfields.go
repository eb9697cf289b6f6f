// Package docfields is the document schema: the field names a search front
// end relies on, their Go types and their Elasticsearch mapping.
package docfields

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Document is one search document. System fields carry the doc_ prefix;
// custom fields (from meta mappings and add_meta) live in Extra under
// extra_* names and are flattened into the JSON source.
type Document struct {
	URL         string   `json:"doc_url"`
	Host        string   `json:"doc_host"`
	Path        string   `json:"doc_path"`
	Title       string   `json:"doc_title"`
	Description string   `json:"doc_description,omitempty"`
	Keywords    []string `json:"doc_keywords,omitempty"`
	Author      []string `json:"doc_author,omitempty"`
	Language    string   `json:"doc_language,omitempty"`
	// LanguageDetected says Language was guessed from the text, the page
	// declaring none.
	LanguageDetected bool      `json:"doc_language_detected,omitempty"`
	Headings         []string  `json:"doc_headings,omitempty"`
	Body             string    `json:"doc_body"`
	ContentType      string    `json:"doc_content_type"`
	Modified         time.Time `json:"doc_modified,omitzero"`
	Crawled          time.Time `json:"doc_crawled,omitzero"`
	ContentHash      string    `json:"doc_content_hash"`
	Source           string    `json:"doc_source"`
	Depth            int       `json:"doc_depth"`
	// Pages is a document file's page count (PDF pages, slides, the pages
	// a word processor saved); 0, and left out, for a web page.
	Pages int `json:"doc_pages,omitempty"`
	// Duplicates are the other URLs serving the same content, when this
	// document stands for a group of duplicates (doc_url is its primary).
	Duplicates []string `json:"doc_duplicates,omitempty"`
	NoSnippet  bool     `json:"doc_nosnippet"`
	NoArchive  bool     `json:"doc_noarchive"`
	// Passages are the document's passages with their vectors, filled by
	// the sink of an index with embeddings (doc_passages); none otherwise.
	Passages []Passage `json:"doc_passages,omitempty"`
	// Extra holds extra_* fields; each may have several values.
	Extra map[string][]string `json:"-"`
	// Sections mark where the body's parts start (headings, pages), for
	// cutting it into passages; not a field of the index.
	Sections []Section `json:"-"`
}

// ID derives the Elasticsearch _id from a normalised URL (query included).
// A hash keeps ids short and free of characters that need escaping in
// request paths, and is stable across runs and machines.
func ID(normalisedURL string) string {
	sum := sha256.Sum256([]byte(normalisedURL))
	return hex.EncodeToString(sum[:16])
}

// MediaType is the lower-case type/subtype of a Content-Type value, its
// parameters left out: what doc_content_type holds, what mime_types is
// matched against and what picks a page's extractor. It allocates only
// when the value is not lower-case already.
func MediaType(contentType string) string {
	if i := strings.IndexByte(contentType, ';'); i >= 0 {
		contentType = contentType[:i]
	}
	contentType = strings.TrimSpace(contentType)
	for i := 0; i < len(contentType); i++ {
		if 'A' <= contentType[i] && contentType[i] <= 'Z' {
			return strings.ToLower(contentType)
		}
	}
	return contentType
}

// IsPage reports whether a media type is an HTML page, which
// fetch.max_body_bytes bounds; every other type is a document, bounded by
// fetch.max_document_bytes.
func IsPage(mediaType string) bool {
	return mediaType == "text/html" || mediaType == "application/xhtml+xml"
}

// Generic reports whether a media type says too little about what the
// body is, so that its bytes decide: none at all, application/octet-stream
// and the names servers give downloads, and zip, which is what a server
// without the Office types calls a docx or an odt.
func Generic(mediaType string) bool {
	switch mediaType {
	case "", "application/octet-stream", "binary/octet-stream", "application/unknown", "application/x-unknown",
		"application/download", "application/x-download", "application/force-download",
		"application/zip", "application/x-zip-compressed":
		return true
	}
	return false
}
