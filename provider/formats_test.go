package provider_test

import (
	"bufio"
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/crawltest"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/provider"
)

// plainText is another document format, as small as one can be: the
// first line is the title, the text the body, and a line that is a URL a
// link.
type plainText struct{ source string }

func (p plainText) Extract(page mapping.Page) (*mapping.Result, error) {
	res := &mapping.Result{Charset: "utf-8"}
	d := &res.Doc
	d.URL, d.Host, d.Path = page.URL.String(), page.URL.Host, page.URL.Path
	d.ContentType, d.Source, d.Depth, d.Crawled = "text/markdown", p.source, page.Depth, page.Fetched
	sc := bufio.NewScanner(bytes.NewReader(page.Body))
	var body []string
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if d.Title == "" {
			d.Title = line
		}
		if strings.HasPrefix(line, "http://") {
			res.Links = append(res.Links, mapping.Link{URL: line, Tag: "a"})
		}
		body = append(body, line)
	}
	d.Body = strings.Join(body, "\n")
	d.ContentHash = mapping.ContentHash(d)
	return res, nil
}

// A format is one registration: text/markdown pages are asked for, read by
// their own extractor, their links followed and their documents indexed
// into the real node, with no change to the crawl.
func TestASecondFormatIsReadByItsOwnExtractorEndToEnd(t *testing.T) {
	provider.AddFormat(t, provider.Format{Types: []string{"text/markdown"},
		New: func(_ *config.Config, src *config.Source) (provider.Extractor, error) {
			return plainText{src.Name}, nil
		}})
	esURL, index := estest.URL(t), estest.Index(t)
	site := newSite(t)
	site.html("/", "home", links("/notes.md"))
	site.text("/notes.md", "text/markdown; charset=utf-8", "Release notes\nThe crawler reads markdown now.\n"+site.URL+"/more.md\n")
	site.text("/more.md", "text/markdown", "More notes\nFound by a link in markdown.\n")
	cfg, _ := testConfig(t, fmt.Sprintf("elasticsearch: {addresses: [%q], index: %s, replicas: 0}", esURL, index),
		"mime_types: [text/html, text/markdown]", site.URL+"/")

	report := crawl(t, cfg)

	if report.Total.Created != 3 {
		t.Errorf("report counts %d created, want 3: %+v", report.Total.Created, report.Total)
	}
	docs := searchAll(t, esURL, index)
	for path, title := range map[string]string{"/notes.md": "Release notes", "/more.md": "More notes"} {
		doc := docs[docfields.ID(site.URL+path)]
		if doc == nil {
			t.Errorf("%s: not indexed", path)
			continue
		}
		if doc.Title != title || doc.ContentType != "text/markdown" {
			t.Errorf("%s: indexed with title %q and type %q, want %q and text/markdown", path, doc.Title, doc.ContentType, title)
		}
	}
	if home := docs[docfields.ID(site.URL+"/")]; home == nil || home.Title != "home" || home.ContentType != "text/html" {
		t.Errorf("the home page was not read as HTML: %+v", home)
	}
	hs := site.headers("/notes.md")
	if len(hs) == 0 {
		t.Fatal("/notes.md was never requested")
	}
	if got, want := hs[0].Get("Accept"), "text/html,"+strings.Join(provider.FormatTypes()[1:], ";q=0.9,")+";q=0.9,*/*;q=0.1"; !strings.HasSuffix(want, "text/markdown;q=0.9,*/*;q=0.1") || got != want {
		t.Errorf("Accept %q, want %q", got, want)
	}
}

// The default mime_types are the types of the formats the crawler reads.
func TestTheDefaultMimeTypesAreTheTypesOfTheFormats(t *testing.T) {
	cfg := crawltest.Config(t, "output: {file: out.ndjson}\nsources:\n  - name: s\n    start_urls: [\"https://site.example/\"]\n")
	if got, want := strings.Join(cfg.Sources[0].MimeTypes, ","), strings.Join(provider.FormatTypes(), ","); got != want {
		t.Errorf("default mime_types %s, formats read %s", got, want)
	}
}
