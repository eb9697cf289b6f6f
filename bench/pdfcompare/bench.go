package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"time"

	"github.com/crawlspace/crawlspace/document"
	pdfreader "github.com/crawlspace/crawlspace/document/pdf"
)

// runBench is -bench: documents per second and CPU seconds per MB of the
// reader crawlspace ships beside pdftotext on the same files, one file
// after another, and the peak RSS of each while big is extracted.
// pdftotext runs once per file, as it must; the reader reads all files in
// one process, as the crawler does, and its one-time setup (loading the
// compiled PDFium from the cache) is left out and reported apart.
func runBench(corpus, big, cache string, timeout time.Duration) error {
	files, err := filepath.Glob(filepath.Join(corpus, "*.pdf"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no PDFs in %s", corpus)
	}
	sort.Strings(files)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	var mb float64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return err
		}
		mb += float64(st.Size()) / (1 << 20)
	}

	var pCPU, pWall float64
	for _, f := range files {
		start := time.Now()
		r := measure(timeout, "pdftotext", f, 0, "pdftotext", "-enc", "UTF-8", f, os.DevNull)
		pWall += time.Since(start).Seconds()
		if r.err != "" {
			return fmt.Errorf("pdftotext %s: %s", f, r.err)
		}
		pCPU += r.cpu
	}
	args := append([]string{"-child", "readall", "-cache", cache}, files...)
	rr := measure(timeout, "reader", "", 0, self, args...)
	if rr.err != "" {
		return fmt.Errorf("reader: %s", rr.err)
	}
	rep := rr.rep

	fmt.Printf("%d PDFs, %.1f MB (%s)\n\n", len(files), mb, corpus)
	fmt.Println("| | documents/s | CPU s/MB | CPU ratio to pdftotext |")
	fmt.Println("|---|---|---|---|")
	fmt.Printf("| pdftotext -enc UTF-8 | %.1f | %.3f | 1.00 |\n", float64(len(files))/pWall, pCPU/mb)
	fmt.Printf("| document/pdf Reader | %.1f | %.3f | %.2f |\n", float64(rep.Docs)/rep.Wall, rep.ExtractCPU/mb, rep.ExtractCPU/pCPU)
	fmt.Printf("\nReader setup (a worker started, PDFium from the compilation cache, once per worker): %.2f s CPU\n", rep.SetupCPU)

	if big == "" {
		return nil
	}
	st, err := os.Stat(big)
	if err != nil {
		return err
	}
	pt := measure(timeout, "pdftotext", big, 0, "pdftotext", "-enc", "UTF-8", big, os.DevNull)
	rb := measure(timeout, "reader", big, 0, self, "-child", "readall", "-cache", cache, big)
	fmt.Printf("\n%s: %s pages, %.1f MB\n\n", filepath.Base(big), pages(big), float64(st.Size())/(1<<20))
	fmt.Println("| | CPU s | peak RSS MB |")
	fmt.Println("|---|---|---|")
	fmt.Printf("| pdftotext | %.2f | %.0f |\n", pt.cpu, pt.rssMB)
	if rb.err != "" {
		fmt.Printf("| document/pdf Reader | error: %s | |\n", rb.err)
	} else {
		fmt.Printf("| document/pdf Reader | %.2f | %.0f (worker), %.0f (crawler's process) |\n", rb.cpu, rb.rep.PeakRSSMB, rb.rep.ParentMB)
	}
	return nil
}

// readAll is the readall child: every file through one Reader, in one
// process, with the default limits but for the text, which is not cut.
func readAll(cache string, files []string) error {
	r := pdfreader.NewReader(pdfreader.Config{CacheDir: cache})
	defer r.Close()
	t0 := treeCPU()
	r.Read(context.Background(), []byte("%PDF-1.4"), document.Limits{})
	rep := childReport{SetupCPU: treeCPU() - t0}
	t1, start := treeCPU(), time.Now()
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if _, err := r.Read(context.Background(), data, document.Limits{MaxText: 1 << 30}); err != nil {
			return fmt.Errorf("%s: %w", f, err)
		}
		rep.Docs++
	}
	rep.ExtractCPU, rep.Wall = treeCPU()-t1, time.Since(start).Seconds()
	rep.PeakRSSMB, rep.ParentMB = childrenHWM(), vmHWM(os.Getpid())
	return json.NewEncoder(os.Stdout).Encode(rep)
}
