package provider

import (
	"strings"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/mapping"
)

// Extractor turns a fetched page (its URL, headers and body as sent, the
// declared charset among the headers) into a document, the page's links
// and what the crawl needs from it: robots directives and rel=canonical.
// One is built per source and format; it is safe for concurrent use.
type Extractor interface {
	Extract(mapping.Page) (*mapping.Result, error)
}

// Format is a document format the crawler reads.
type Format struct {
	// Types are the media types it reads, the preferred first.
	Types []string
	// New builds its extractor for one source of a configuration.
	New func(cfg *config.Config, src *config.Source) (Extractor, error)
}

// formats are the document formats the crawler reads, the preferred
// first. They give page requests their Accept header, and a page's media
// type picks its extractor; a page of a type mime_types allows that no
// format names is read by the first. The default mime_types are the types
// listed here. To read another format, add it here.
var formats = []Format{
	{Types: []string{"text/html", "application/xhtml+xml"}, New: newHTML},
}

func newHTML(cfg *config.Config, src *config.Source) (Extractor, error) {
	return mapping.New(cfg, src), nil
}

// accept is the Accept header of page requests: the formats' types in
// order of preference, then anything else, which mime_types may allow.
func accept(fs []Format) string {
	var b strings.Builder
	for _, f := range fs {
		for _, t := range f.Types {
			if b.Len() == 0 {
				b.WriteString(t)
				continue
			}
			b.WriteString("," + t + ";q=0.9")
		}
	}
	b.WriteString(",*/*;q=0.1")
	return b.String()
}

// extractors are one source's extractors by media type.
type extractors struct {
	byType map[string]Extractor
	first  Extractor
}

func newExtractors(cfg *config.Config, src *config.Source, fs []Format) (extractors, error) {
	ex := extractors{byType: map[string]Extractor{}}
	for _, f := range fs {
		x, err := f.New(cfg, src)
		if err != nil {
			return extractors{}, err
		}
		if ex.first == nil {
			ex.first = x
		}
		for _, t := range f.Types {
			ex.byType[t] = x
		}
	}
	return ex, nil
}

// forType is the extractor of a media type (docfields.MediaType).
func (ex extractors) forType(mediaType string) Extractor {
	if x, ok := ex.byType[mediaType]; ok {
		return x
	}
	return ex.first
}
