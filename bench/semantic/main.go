// Command semantic measures crawlspace's passages and embeddings on a real
// documentation site, Debian's Policy Manual as the debian-policy package
// installs it (docs/semantic.md gives the figures and how they were made):
//
//	go run ./bench/semantic layout  [-scale N] [-reps R] [-index-type T]
//	go run ./bench/semantic quality [-model M] [-max-tokens N]
//
// layout builds the two layouts the passages could have, nested in their
// documents or in an index of their own, and compares kNN recall against
// exact search, latency, index size and what deletes and updates cost.
// quality crawls the site with crawlspace into Elasticsearch with
// embeddings on and off, and asks the questions of
// testdata/semantic/policy-questions.yaml by words alone, by kNN alone and
// both combined: recall@5 and MRR of the section answering each, passages
// per second, CPU per passage and index size.
//
// It needs the node of scripts/elasticsearch (CRAWLSPACE_ES_URL) and the
// embedding server of scripts/embedder (CRAWLSPACE_EMBEDDER_URL).
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/crawlspace/crawlspace/embed"
	"github.com/crawlspace/crawlspace/passage"
)

const defaultSite = "/usr/share/doc/debian-policy/policy.html"

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: semantic layout|quality [flags]")
		os.Exit(2)
	}
	var err error
	switch os.Args[1] {
	case "layout":
		err = layoutCmd(os.Args[2:])
	case "quality":
		err = qualityCmd(os.Args[2:])
	default:
		fmt.Fprintln(os.Stderr, "usage: semantic layout|quality [flags]")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "semantic:", err)
		os.Exit(1)
	}
}

func env(name, def string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return def
}

// common are the flags every subcommand has.
type common struct {
	site, questions, es, embedder, model, cache string
}

func (c *common) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.site, "site", defaultSite, "the documentation site's directory")
	fs.StringVar(&c.questions, "questions", "testdata/semantic/policy-questions.yaml", "the questions file")
	fs.StringVar(&c.es, "es", env("CRAWLSPACE_ES_URL", "http://127.0.0.1:9200"), "Elasticsearch")
	fs.StringVar(&c.embedder, "embedder", env("CRAWLSPACE_EMBEDDER_URL", "http://127.0.0.1:9997/v1"), "the embedding API's base URL")
	fs.StringVar(&c.model, "model", "all-minilm-l6-v2", "the model")
	fs.StringVar(&c.cache, "cache", filepath.Join(os.TempDir(), "crawlspace-semantic-bench"), "where vectors are kept between runs")
}

func (c *common) client() (embed.Client, error) {
	return embed.NewOpenAI(embed.OpenAIOptions{URL: c.embedder, Model: c.model, Dimensions: 384, Timeout: 10 * time.Minute})
}

func layoutCmd(args []string) error {
	fs := flag.NewFlagSet("layout", flag.ExitOnError)
	var c common
	c.flags(fs)
	scale := fs.Int("scale", 1, "copies of the site, each copy's vectors moved a little")
	reps := fs.Int("reps", 5, "times each query is timed")
	indexType := fs.String("index-type", "int8_hnsw", "dense_vector index type")
	maxTokens := fs.Int("max-tokens", 200, "passage size in tokens")
	_ = fs.Parse(args)
	client, err := c.client()
	if err != nil {
		return err
	}
	opts := passage.Options{MaxTokens: *maxTokens, Overlap: *maxTokens / 5, MaxPassages: 256, Title: true, Headings: true, Fingerprint: "openai:" + c.model + ":384"}
	docs, err := loadCorpus(c.site, "http://policy.test/", opts, client, c.cache)
	if err != nil {
		return err
	}
	qs, err := loadQuestions(c.questions)
	if err != nil {
		return err
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Q
	}
	vectors, err := cachedVectors(texts, opts.Fingerprint+"/questions", client, c.cache)
	if err != nil {
		return err
	}
	_, err = runLayouts(os.Stdout, newNode(c.es), scaleCorpus(docs, *scale), vectors, 384, *indexType, *reps)
	return err
}
