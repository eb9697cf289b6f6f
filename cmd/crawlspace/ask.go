package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"github.com/crawlspace/crawlspace/embed"
	// Named apart from the package tests' search helper.
	psearch "github.com/crawlspace/crawlspace/search"
	"github.com/crawlspace/crawlspace/sink"
)

func init() {
	register("ask", "ask the index a question: the passages that answer it, by words, by meaning and both", runAsk)
}

func runAsk(args []string) int { return ask(args, os.Stdout, os.Stderr) }

// ask embeds a question with the index's embedding service and shows the
// passages each mode finds (docs/semantic.md).
func ask(args []string, stdout, stderr io.Writer) int {
	fs := newFlags("ask")
	fs.SetOutput(stderr)
	path := fs.String("config", "", "configuration file")
	mode := fs.String("mode", "all", "lexical, knn, hybrid or all")
	k := fs.Int("k", psearch.Defaults.K, "passages shown")
	asJSON := fs.Bool("json", false, "print JSON")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	question := strings.TrimSpace(strings.Join(fs.Args(), " "))
	modes := psearch.Modes
	if *mode != "all" {
		modes = []psearch.Mode{psearch.Mode(*mode)}
	}
	switch {
	case question == "":
		fmt.Fprintln(stderr, "crawlspace ask: give the question after the flags")
		return exitUsage
	case *mode != "all" && *mode != string(psearch.Lexical) && *mode != string(psearch.KNN) && *mode != string(psearch.Hybrid):
		fmt.Fprintf(stderr, "crawlspace ask: -mode %q is not lexical, knn, hybrid or all\n", *mode)
		return exitUsage
	case *k < 1 || *k > 100:
		fmt.Fprintln(stderr, "crawlspace ask: -k must be from 1 to 100")
		return exitUsage
	}
	cfg, _, ok := loadConfig(*path, stderr)
	if !ok {
		return exitUsage
	}
	if cfg.Elasticsearch == nil || cfg.Elasticsearch.Embeddings == nil {
		fmt.Fprintf(stderr, "crawlspace ask: %s has no elasticsearch.embeddings: its index holds no passages to ask\n", cfg.File)
		return exitUsage
	}
	es, err := sink.Client(cfg.Elasticsearch)
	if err != nil {
		fmt.Fprintf(stderr, "crawlspace ask: %v\n", err)
		return exitFailed
	}
	client, err := embed.New(cfg.Elasticsearch.Embeddings, es)
	if err != nil {
		fmt.Fprintf(stderr, "crawlspace ask: %v\n", err)
		return exitFailed
	}
	ctx := context.Background()
	a, err := client.Embed(ctx, []string{question})
	if err != nil {
		fmt.Fprintf(stderr, "crawlspace ask: embedding the question: %v\n", err)
		return exitFailed
	}
	o := psearch.Defaults
	o.K = *k
	found := map[psearch.Mode][]psearch.Passage{}
	for _, m := range modes {
		ps, err := psearch.Run(ctx, es, cfg.Elasticsearch.Index, m, question, a.Vectors[0], o)
		if err != nil {
			fmt.Fprintf(stderr, "crawlspace ask: %v\n", err)
			return exitFailed
		}
		found[m] = ps
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(found); err != nil {
			return exitFailed
		}
		return exitOK
	}
	for _, m := range modes {
		fmt.Fprintf(stdout, "%s:\n", m)
		if len(found[m]) == 0 {
			fmt.Fprintln(stdout, "  nothing found")
		}
		for i, p := range found[m] {
			fmt.Fprintf(stdout, "  %d. %.3f  %s\n", i+1, p.Score, p.URL)
			if len(p.Headings) > 0 {
				fmt.Fprintf(stdout, "     %s\n", strings.Join(p.Headings, " > "))
			}
			fmt.Fprintf(stdout, "     %s\n", clip(p.Text, 240))
		}
	}
	return exitOK
}

// clip cuts s to about n bytes on a word boundary, on one line.
func clip(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) <= n {
		return s
	}
	cut := strings.LastIndexByte(s[:n], ' ')
	if cut < n/2 {
		cut = n
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + " …"
}
