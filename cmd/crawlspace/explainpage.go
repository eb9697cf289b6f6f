package main

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/rules"
)

// pageFields is what `explain -page` shows of a saved page: the document
// the URL's source would index from it, which rule filled which field,
// and the values a field's type refused.
type pageFields struct {
	Page          string             `json:"page"`
	Doc           docfields.Document `json:"doc"`
	Origins       []mapping.Origin   `json:"origins"`
	FieldWarnings []string           `json:"field_warnings,omitempty"`
}

// mapPage maps the saved page file as the document of the URL l explains,
// with the extractor of its source and its crawl rule's add_meta, offline.
// It returns nil and the exit code when it cannot.
func mapPage(cfg *config.Config, set *rules.Set, l explanation, file string, stderr io.Writer) (*pageFields, int) {
	if l.Source == "" {
		fmt.Fprintf(stderr, "crawlspace explain: %s belongs to no source (%s): no extractor to map the page with\n", l.URL, dash(l.Reason))
		return nil, exitFailed
	}
	body, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(stderr, "crawlspace explain:", err)
		return nil, exitFailed
	}
	// The document is the key's; its links resolve against the URL requested.
	u, err := url.Parse(l.Key)
	if err != nil {
		fmt.Fprintln(stderr, "crawlspace explain:", err)
		return nil, exitFailed
	}
	src := cfg.SourceByName(l.Source)
	var meta map[string]string
	if rs := set.Source(l.Source); rs != nil {
		d := rs.Decide(l.Key, 0)
		for k, vs := range d.Meta {
			if len(vs) > 0 {
				if meta == nil {
					meta = map[string]string{}
				}
				meta[k] = vs[0]
			}
		}
	}
	ctype := http.DetectContentType(body)
	if strings.HasPrefix(ctype, "text/plain") {
		ctype = "text/html" // a saved page without a doctype sniffs as text
	}
	// explain runs no crawler, so no crawler's clock: the saved page is
	// mapped as if fetched now, by the machine's clock.
	page := mapping.Page{URL: u, Header: http.Header{"Content-Type": {ctype}},
		Body: body, Source: l.Source, Fetched: time.Now().UTC(), AddMeta: meta}
	if l.Fetch != l.Key {
		page.Request = l.Fetch
	}
	res, err := mapping.New(cfg, src).Extract(page)
	if err != nil {
		fmt.Fprintln(stderr, "crawlspace explain:", err)
		return nil, exitFailed
	}
	pf := &pageFields{Page: file, Doc: res.Doc, Origins: res.Origins, FieldWarnings: res.FieldWarnings}
	if pf.Origins == nil {
		pf.Origins = []mapping.Origin{}
	}
	if res.Doc.LanguageDetected {
		pf.Origins = append(pf.Origins, mapping.Origin{Field: "doc_language", Rule: "detected (the page declares no language)", Values: []string{res.Doc.Language}})
	}
	return pf, exitOK
}

// print writes the fields that rules filled, then the values refused.
func (pf *pageFields) print(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "FIELD\tVALUES\tFILLED BY")
	for _, o := range pf.Origins {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", o.Field, dash(strings.Join(o.Values, " | ")), o.Rule)
	}
	for _, fw := range pf.FieldWarnings {
		fmt.Fprintf(tw, "refused\t%s\t\n", fw)
	}
	return tw.Flush()
}
