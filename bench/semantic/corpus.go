package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"time"

	"gopkg.in/yaml.v3"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/embed"
	"github.com/crawlspace/crawlspace/mapping"
	"github.com/crawlspace/crawlspace/passage"
)

// corpusDoc is one page of the corpus with its passages and their vectors.
type corpusDoc struct {
	ID       string              `json:"id"`
	Doc      *docfields.Document `json:"doc"`
	Passages []docfields.Passage `json:"passages"`
}

// loadCorpus maps every HTML page of dir as crawlspace would (served at
// base), cuts it into passages with opts, and embeds them, reading the
// vectors from a cache file when an earlier run made them.
func loadCorpus(dir, base string, opts passage.Options, client embed.Client, cacheDir string) ([]corpusDoc, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.html"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no HTML pages in %s", dir)
	}
	sort.Strings(files)
	cfg, err := config.Parse("bench.yaml", []byte("sources:\n  - name: policy\n    start_urls: [\""+base+"\"]\n"))
	if err != nil {
		return nil, err
	}
	x := mapping.New(cfg, &cfg.Sources[0])
	var docs []corpusDoc
	var texts []string
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		u, _ := url.Parse(base + filepath.Base(f))
		res, err := x.Extract(mapping.Page{URL: u, Header: http.Header{"Content-Type": {"text/html; charset=utf-8"}}, Body: body, Source: "policy"})
		if err != nil {
			return nil, err
		}
		d := res.Doc
		ps, _ := passage.Split(&d, opts)
		for i := range ps {
			texts = append(texts, passage.Embedded(d.Title, &ps[i], opts))
		}
		docs = append(docs, corpusDoc{ID: docfields.ID(d.URL), Doc: &d, Passages: ps})
	}
	vectors, err := cachedVectors(texts, opts.Fingerprint, client, cacheDir)
	if err != nil {
		return nil, err
	}
	k := 0
	for i := range docs {
		for j := range docs[i].Passages {
			docs[i].Passages[j].Vector = vectors[k]
			k++
		}
	}
	return docs, nil
}

// cachedVectors embeds texts, or reads what an earlier run embedded.
func cachedVectors(texts []string, fingerprint string, client embed.Client, cacheDir string) ([][]float32, error) {
	h := sha256.New()
	h.Write([]byte(fingerprint))
	for _, t := range texts {
		h.Write([]byte{0})
		h.Write([]byte(t))
	}
	path := filepath.Join(cacheDir, "vectors-"+hex.EncodeToString(h.Sum(nil))[:16]+".json")
	if raw, err := os.ReadFile(path); err == nil {
		var v [][]float32
		if json.Unmarshal(raw, &v) == nil && len(v) == len(texts) {
			return v, nil
		}
	}
	start := time.Now()
	vectors, err := embedAll(client, texts, 32)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "embedded %d passages in %.1fs\n", len(texts), time.Since(start).Seconds())
	if err := os.MkdirAll(cacheDir, 0o755); err == nil {
		raw, _ := json.Marshal(vectors)
		_ = os.WriteFile(path, raw, 0o644)
	}
	return vectors, nil
}

func embedAll(client embed.Client, texts []string, batch int) ([][]float32, error) {
	var out [][]float32
	for i := 0; i < len(texts); i += batch {
		a, err := client.Embed(context.Background(), texts[i:min(i+batch, len(texts))])
		if err != nil {
			return nil, err
		}
		out = append(out, a.Vectors...)
	}
	return out, nil
}

// question is one of testdata/semantic/policy-questions.yaml.
type question struct {
	Q       string `yaml:"q"`
	Page    string `yaml:"page"`
	Section string `yaml:"section"`
}

// answerURL is the passage URL that answers q on a site served at base.
func (q question) answerURL(base string) string {
	return base + q.Page + "#" + q.Section
}

// loadQuestions reads the questions file.
func loadQuestions(path string) ([]question, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		Questions []question `yaml:"questions"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Questions, nil
}
