package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
)

// indexBody is what crawlspace's Elasticsearch sink sends to create its
// physical index: the document mapping with one shard and no replica (a
// single-node cluster cannot place replicas).
func indexBody() map[string]any {
	body := docfields.Mapping(nil)
	settings := body["settings"].(map[string]any)
	settings["number_of_shards"] = 1
	settings["number_of_replicas"] = 0
	return body
}

func runMapping(args []string) error {
	fs := flag.NewFlagSet("mapping", flag.ContinueOnError)
	if err := fs.Parse(args); err != nil {
		return err
	}
	return printJSON(indexBody())
}

// BulkResult is Elasticsearch's own indexing rate for a set of documents.
type BulkResult struct {
	Docs     int64   `json:"docs"`
	Failed   int64   `json:"failed"`
	Bytes    int64   `json:"bytes"`
	Requests int64   `json:"requests"`
	Seconds  float64 `json:"seconds"`
	Rate     float64 `json:"docs_per_second"`
	Workers  int     `json:"workers"`
}

func runBulk(args []string) error {
	fs := flag.NewFlagSet("bulk", flag.ContinueOnError)
	es := fs.String("es", "http://127.0.0.1:9200", "Elasticsearch URL")
	index := fs.String("index", "", "fresh index to create and fill")
	file := fs.String("file", "", "_bulk NDJSON written by crawlspace's file sink")
	chunk := fs.Int("chunk-bytes", 5_000_000, "bytes per _bulk request (crawlspace's bulk_flush_bytes default)")
	workers := fs.Int("workers", 2, "_bulk requests in flight (crawlspace's bulk_workers default)")
	keep := fs.Bool("keep", false, "keep the index afterwards")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *index == "" || *file == "" {
		return errors.New("-index and -file are required")
	}
	base := strings.TrimRight(*es, "/")
	client := &http.Client{Timeout: 10 * time.Minute}
	if err := createIndex(client, base, *index); err != nil {
		return err
	}
	if !*keep {
		defer func() {
			req, _ := http.NewRequest(http.MethodDelete, base+"/"+*index, nil)
			if res, err := client.Do(req); err == nil {
				res.Body.Close()
			}
		}()
	}
	res, err := bulkLoad(client, base, *index, *file, *chunk, max(*workers, 1))
	if err != nil {
		return err
	}
	return printJSON(res)
}

func createIndex(client *http.Client, base, index string) error {
	raw, err := json.Marshal(indexBody())
	if err != nil {
		return err
	}
	req, _ := http.NewRequest(http.MethodPut, base+"/"+index+"?wait_for_active_shards=1", bytes.NewReader(raw))
	req.Header.Set("Content-Type", "application/json")
	res, err := client.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return fmt.Errorf("creating index %s: %s: %s", index, res.Status, msg)
	}
	return nil
}

// bulkLoad sends file to index in chunks of about chunkBytes from workers
// goroutines, and times it from the first request to the end of the
// refresh that makes the documents searchable, as crawlspace's sink does
// before it reports a crawl done.
func bulkLoad(client *http.Client, base, index, file string, chunkBytes, workers int) (*BulkResult, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	res := &BulkResult{Workers: workers}
	var docs, failed, bytesSent, requests atomic.Int64
	chunks := make(chan []byte, workers)
	var wg sync.WaitGroup
	var firstErr error
	var errOnce sync.Once
	url := base + "/" + index + "/_bulk"
	for range workers {
		wg.Go(func() {
			for body := range chunks {
				n, bad, err := postBulk(client, url, body)
				if err != nil {
					errOnce.Do(func() { firstErr = err })
					continue
				}
				docs.Add(n)
				failed.Add(bad)
				bytesSent.Add(int64(len(body)))
				requests.Add(1)
			}
		})
	}
	began := time.Now()
	readErr := readChunks(f, chunkBytes, chunks)
	close(chunks)
	wg.Wait()
	if readErr != nil {
		return nil, readErr
	}
	if firstErr != nil {
		return nil, firstErr
	}
	req, _ := http.NewRequest(http.MethodPost, base+"/"+index+"/_refresh", nil)
	rr, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	rr.Body.Close()
	res.Seconds = time.Since(began).Seconds()
	res.Docs, res.Failed, res.Bytes, res.Requests = docs.Load(), failed.Load(), bytesSent.Load(), requests.Load()
	if res.Seconds > 0 {
		res.Rate = float64(res.Docs-res.Failed) / res.Seconds
	}
	return res, nil
}

// readChunks splits _bulk NDJSON into request bodies of about chunkBytes,
// never between an action and its document, and drops each action's
// _index so the documents go to the index in the request path.
func readChunks(r io.Reader, chunkBytes int, out chan<- []byte) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var buf []byte
	expectSource := false
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line = append(line, '\n')
			}
			if expectSource {
				buf = append(buf, line...)
				expectSource = false
			} else {
				action, hasSource, aerr := stripIndex(line)
				if aerr != nil {
					return aerr
				}
				if len(buf) >= chunkBytes {
					out <- buf
					buf = nil
				}
				buf = append(buf, action...)
				expectSource = hasSource
			}
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			return err
		}
	}
	if len(buf) > 0 {
		out <- buf
	}
	return nil
}

func stripIndex(line []byte) ([]byte, bool, error) {
	var action map[string]map[string]any
	if err := json.Unmarshal(line, &action); err != nil || len(action) != 1 {
		return nil, false, fmt.Errorf("not a _bulk action line: %.120s", line)
	}
	hasSource := true
	for op, meta := range action {
		delete(meta, "_index")
		hasSource = op != "delete"
	}
	raw, err := json.Marshal(action)
	if err != nil {
		return nil, false, err
	}
	return append(raw, '\n'), hasSource, nil
}

func postBulk(client *http.Client, url string, body []byte) (items, failed int64, err error) {
	req, _ := http.NewRequest(http.MethodPost, url, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/x-ndjson")
	res, err := client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
		return 0, 0, fmt.Errorf("_bulk: %s: %s", res.Status, msg)
	}
	var out struct {
		Items []map[string]struct {
			Status int `json:"status"`
		} `json:"items"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return 0, 0, fmt.Errorf("_bulk response: %w", err)
	}
	for _, it := range out.Items {
		for _, r := range it {
			if r.Status >= 300 {
				failed++
			}
		}
	}
	return int64(len(out.Items)), failed, nil
}

func runESCPU(args []string) error {
	fs := flag.NewFlagSet("escpu", flag.ContinueOnError)
	es := fs.String("es", "http://127.0.0.1:9200", "Elasticsearch URL")
	if err := fs.Parse(args); err != nil {
		return err
	}
	client := &http.Client{Timeout: 30 * time.Second}
	res, err := client.Get(strings.TrimRight(*es, "/") + "/_nodes/_local/stats/process")
	if err != nil {
		return err
	}
	defer res.Body.Close()
	var out struct {
		Nodes map[string]struct {
			Process struct {
				CPU struct {
					TotalMillis int64 `json:"total_in_millis"`
				} `json:"cpu"`
			} `json:"process"`
		} `json:"nodes"`
	}
	if err := json.NewDecoder(res.Body).Decode(&out); err != nil {
		return fmt.Errorf("node stats: %w", err)
	}
	var ms int64
	for _, n := range out.Nodes {
		ms += n.Process.CPU.TotalMillis
	}
	fmt.Printf("%.2f\n", float64(ms)/1000)
	return nil
}
