package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/internal/esclient"
	"github.com/crawlspace/crawlspace/passage"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/search"
	"github.com/crawlspace/crawlspace/sink"
)

// crawlRun is one crawl of the site and what it cost.
type crawlRun struct {
	name        string
	wall, cpu   time.Duration // the crawler's process
	embedderCPU time.Duration
	report      *provider.Report
	sizeBytes   int64
	index       string
}

func cpuOf(usage syscall.Rusage) time.Duration {
	return time.Duration(usage.Utime.Nano() + usage.Stime.Nano())
}

// processCPU is the CPU a process has used, from /proc.
func processCPU(pid int) time.Duration {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0
	}
	s := string(raw)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	if len(fields) < 13 {
		return 0
	}
	u, _ := strconv.ParseInt(fields[11], 10, 64)
	k, _ := strconv.ParseInt(fields[12], 10, 64)
	return time.Duration(u+k) * 10 * time.Millisecond // USER_HZ is 100 on Linux
}

// embedderPID finds the embedding server's process by its main class.
func embedderPID() int {
	dirs, _ := os.ReadDir("/proc")
	for _, d := range dirs {
		pid, err := strconv.Atoi(d.Name())
		if err != nil {
			continue
		}
		cmd, _ := os.ReadFile("/proc/" + d.Name() + "/cmdline")
		if strings.Contains(string(cmd), "CrawlspaceEmbedder") {
			return pid
		}
	}
	return 0
}

// crawlSite crawls the site at base into index with the embeddings block
// (empty for none) and measures it.
func crawlSite(n *node, es, base, index, embeddings, dir string) (*crawlRun, error) {
	state := filepath.Join(dir, index+"-state")
	_ = os.RemoveAll(state)
	yaml := fmt.Sprintf(`
elasticsearch:
  addresses: [%q]
  index: %s
  replicas: 0
%s
state_dir: %s
allow_private_networks: true
sources:
  - name: policy
    start_urls: [%q]
    politeness: {delay: 0s, max_parallel_per_host: 4}
`, es, index, embeddings, state, base)
	path := filepath.Join(dir, index+".yaml")
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		return nil, err
	}
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		return nil, err
	}
	c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		return nil, err
	}
	pid := embedderPID()
	var before, after syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &before)
	eBefore := processCPU(pid)
	start := time.Now()
	report, err := c.Crawl(context.Background())
	wall := time.Since(start)
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &after)
	eAfter := processCPU(pid)
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return nil, err
	}
	physical := docfields.PhysicalIndexWith(index, nil, cfg.Elasticsearch.IndexOptions())
	size, err := n.storeBytes(physical)
	if err != nil {
		return nil, err
	}
	return &crawlRun{wall: wall, cpu: cpuOf(after) - cpuOf(before), embedderCPU: eAfter - eBefore, report: report, sizeBytes: size, index: index}, nil
}

// scores are recall@5 and MRR (over the first 10) of one way of asking.
type scores struct {
	recall, mrr float64
}

func score(ranks []int) scores {
	var s scores
	for _, r := range ranks {
		if r > 0 && r <= 5 {
			s.recall++
		}
		if r > 0 {
			s.mrr += 1 / float64(r)
		}
	}
	s.recall /= float64(len(ranks))
	s.mrr /= float64(len(ranks))
	return s
}

// rank is where want first is among urls, from 1; 0 when it is not.
func rank(urls []string, want string) int {
	for i, u := range urls {
		if u == want {
			return i + 1
		}
	}
	return 0
}

func qualityCmd(args []string) error {
	fs := flag.NewFlagSet("quality", flag.ExitOnError)
	var c common
	c.flags(fs)
	maxTokens := fs.Int("max-tokens", config.DefaultPassageTokens, "passage size in tokens")
	boosts := fs.String("boosts", "0.02,0.05,0.1,0.2", "the hybrid lexical boosts measured (kNN's is 1)")
	keep := fs.Bool("keep", false, "keep the indices")
	prefixes := fs.Bool("prefixes", true, "embed each passage after the title and its heading path")
	_ = fs.Parse(args)
	qs, err := loadQuestions(c.questions)
	if err != nil {
		return err
	}
	n := newNode(c.es)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: http.FileServer(http.Dir(c.site))}
	go srv.Serve(ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String() + "/"
	dir, err := os.MkdirTemp("", "crawlspace-semantic-quality")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)

	// Without embeddings, then with: the same crawl, one after the other.
	words, err := crawlSite(n, c.es, base, "crawlspace-bench-words", "", dir)
	if err != nil {
		return err
	}
	words.name = "without embeddings"
	emb := fmt.Sprintf("  embeddings: {url: %q, model: %s, dimensions: 384, passages: {max_tokens: %d, overlap_tokens: %d, title: %t, headings: %t}}",
		c.embedder, c.model, *maxTokens, *maxTokens/5, *prefixes, *prefixes)
	sem, err := crawlSite(n, c.es, base, "crawlspace-bench-semantic", emb, dir)
	if err != nil {
		return err
	}
	sem.name = "with embeddings (" + c.model + ", " + strconv.Itoa(*maxTokens) + " tokens)"
	if !*keep {
		defer func() {
			for _, r := range []*crawlRun{words, sem} {
				var aliases map[string]any
				_ = n.do("GET", "/_alias/"+r.index, nil, &aliases)
				for idx := range aliases {
					_ = n.do("DELETE", "/"+idx, nil, nil)
				}
			}
		}()
	}

	w := os.Stdout
	fmt.Fprintf(w, "\n%d pages of %s; %d questions\n\n", words.report.Total.Created, c.site, len(qs))
	fmt.Fprintln(w, "| crawl | pages | passages embedded | wall s | pages/s | passages/s | crawler CPU s | model server CPU s | CPU ms per passage | index size |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
	for _, r := range []*crawlRun{words, sem} {
		p := r.report.Total.Passages
		perPassage := "–"
		passagesPerSec := "–"
		if p.Embedded > 0 {
			perPassage = fmt.Sprintf("%.1f", float64((r.cpu+r.embedderCPU).Milliseconds())/float64(p.Embedded))
			passagesPerSec = fmt.Sprintf("%.1f", float64(p.Embedded)/r.wall.Seconds())
		}
		fmt.Fprintf(w, "| %s | %d | %d | %.1f | %.1f | %s | %.1f | %.1f | %s | %.1f MB |\n", r.name, r.report.Total.Created, p.Embedded,
			r.wall.Seconds(), float64(r.report.Total.Created)/r.wall.Seconds(), passagesPerSec, r.cpu.Seconds(), r.embedderCPU.Seconds(), perPassage, float64(r.sizeBytes)/1e6)
	}
	p := sem.report.Total.Passages
	fmt.Fprintf(w, "\nsent: %d requests, %d characters, %d tokens as the model counts them\n", p.Requests, p.Characters, p.Tokens)

	// The questions, each way.
	es, err := esclient.New(esclient.Config{Addresses: []string{c.es}})
	if err != nil {
		return err
	}
	client, err := c.client()
	if err != nil {
		return err
	}
	texts := make([]string, len(qs))
	for i, q := range qs {
		texts[i] = q.Q
	}
	vectors, err := embedAll(client, texts, 64)
	if err != nil {
		return err
	}
	o := search.Defaults
	o.K = 10
	ways := []struct {
		name  string
		mode  search.Mode
		boost float64
	}{{"words alone (nested match on the passages)", search.Lexical, 0}, {"kNN alone", search.KNN, 0}}
	for _, b := range strings.Split(*boosts, ",") {
		f, err := strconv.ParseFloat(b, 64)
		if err != nil {
			return err
		}
		ways = append(ways, struct {
			name  string
			mode  search.Mode
			boost float64
		}{fmt.Sprintf("hybrid, words × %g + kNN × 1", f), search.Hybrid, f})
	}
	fmt.Fprintln(w, "\n| asked by | recall@5 | MRR@10 | latency p50 |")
	fmt.Fprintln(w, "|---|---:|---:|---:|")
	for _, way := range ways {
		var ranks []int
		var lat []time.Duration
		oo := o
		oo.LexicalBoost = way.boost
		for i, q := range qs {
			start := time.Now()
			found, err := search.Run(context.Background(), es, sem.index, way.mode, q.Q, vectors[i], oo)
			if err != nil {
				return err
			}
			lat = append(lat, time.Since(start))
			var urls []string
			for _, f := range found {
				urls = append(urls, f.URL)
			}
			ranks = append(ranks, rank(urls, q.answerURL(base)))
		}
		s := score(ranks)
		fmt.Fprintf(w, "| %s | %.2f | %.2f | %.0f ms |\n", way.name, s.recall, s.mrr, float64(percentile(lat, 0.5).Microseconds())/1000)
	}
	return tokenRatio(w, n, sem.index, p.Tokens, *prefixes)
}

// tokenRatio compares passage's count of the tokens embedded with the
// model's own.
func tokenRatio(w io.Writer, n *node, index string, modelTokens int64, prefixes bool) error {
	var ans struct {
		Hits struct {
			Hits []struct {
				Source docfields.Document `json:"_source"`
			} `json:"hits"`
		} `json:"hits"`
	}
	q := map[string]any{"size": 1000, "_source": map[string]any{"includes": []string{"doc_title", "doc_passages.text", "doc_passages.headings"}}}
	if err := n.do("POST", "/"+index+"/_search", q, &ans); err != nil {
		return err
	}
	opts := passage.Options{Title: prefixes, Headings: prefixes}
	var ours int64
	for _, h := range ans.Hits.Hits {
		for i := range h.Source.Passages {
			ours += int64(passage.Tokens(passage.Embedded(h.Source.Title, &h.Source.Passages[i], opts)))
		}
	}
	if ours > 0 {
		fmt.Fprintf(w, "\ntokens of what was embedded: %d counted as passage counts them, %d by the model's tokenizer (%.2f×)\n", ours, modelTokens, float64(modelTokens)/float64(ours))
	}
	return nil
}
