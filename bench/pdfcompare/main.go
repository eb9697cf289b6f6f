// Command pdfcompare measures PDF text extractors against poppler's
// pdftotext on a directory of real PDFs: the measurement that chose the
// library behind document/pdf (docs/documents.md, "## PDF").
//
//	go run ./bench/pdfcompare -corpus DIR [-out DIR] [-cache DIR] [-libs pdfium,ledongthuc,reader]
//
// Each extractor runs in a child process of its own per file (this binary
// with -child), so that a panic or a runaway stays there and the child's
// rusage gives honest CPU seconds and peak RSS. The child reports the CPU
// its extraction took apart from setup (compiling the PDFium WebAssembly
// module, or loading it from the -cache directory), which is reported on
// its own. The reference is `pdftotext -enc UTF-8` (no -layout); the
// -layout text is measured against it as well, to show what layout
// changes.
//
// Per extractor and file:
//   - recall: the share of the reference's words (as a bag: a word twice
//     in the reference counts twice) the extractor's text has;
//   - order: the share of the reference's word bigrams (consecutive word
//     pairs) found among the extractor's bigrams: words glued together,
//     columns interleaved or lines shuffled all lower it;
//   - lig: ligature characters (U+FB00..U+FB06) left in the text;
//   - hyph: words broken at a line end with a hyphen ("docu-\nment")
//     whose joined form is a reference word;
//   - cpu s/MB and peak RSS MB.
//
// Build a corpus with the commands in docs/documents.md.
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"time"

	"github.com/klippa-app/go-pdfium"
	"github.com/klippa-app/go-pdfium/references"
	"github.com/klippa-app/go-pdfium/requests"
	"github.com/klippa-app/go-pdfium/webassembly"
	ledong "github.com/ledongthuc/pdf"
	"github.com/tetratelabs/wazero"
	"github.com/tetratelabs/wazero/api"
	"github.com/tetratelabs/wazero/experimental"

	"github.com/crawlspace/crawlspace/document"
	pdfreader "github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/internal/wordmatch"
)

func main() {
	// The Reader reads in copies of this process.
	pdfreader.Worker()
	child := flag.String("child", "", "internal: run one extractor (pdfium, pdfium-interruptible, ledongthuc, reader) on -in, text to -o")
	in := flag.String("in", "", "internal: input PDF")
	outFile := flag.String("o", "", "internal: output text")
	corpus := flag.String("corpus", "/tmp/pdfc/corpus", "directory of PDFs")
	out := flag.String("out", "/tmp/pdfc/out", "directory for the extracted texts")
	cache := flag.String("cache", "/tmp/pdfc/wazero-cache", "wazero compilation cache directory")
	libs := flag.String("libs", "pdfium,pdfium-interruptible,ledongthuc,reader", "extractors to compare")
	timeout := flag.Duration("timeout", 5*time.Minute, "per file and extractor")
	bench := flag.Bool("bench", false, "benchmark the reader beside pdftotext on -corpus (see bench/pdf) instead")
	big := flag.String("big", "", "with -bench: a large PDF whose extraction's peak RSS is measured")
	flag.Parse()
	if *child == "readall" {
		if err := readAll(*cache, flag.Args()); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *bench {
		if err := runBench(*corpus, *big, *cache, *timeout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if *child != "" {
		if err := runChild(*child, *in, *outFile, *cache); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(1)
		}
		return
	}
	if err := run(*corpus, *out, *cache, strings.Split(*libs, ","), *timeout); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// childReport is what a child prints on stdout.
type childReport struct {
	SetupCPU   float64 `json:"setup_cpu"`
	ExtractCPU float64 `json:"extract_cpu"`
	PeakRSSMB  float64 `json:"peak_rss_mb"` // the Reader's: its largest worker's
	ParentMB   float64 `json:"parent_rss_mb"`
	// readall: the extraction's wall time and its documents.
	Wall float64 `json:"wall"`
	Docs int     `json:"docs"`
}

// vmHWM is a process's peak resident set in MB, 0 once it is gone.
func vmHWM(pid int) float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, "VmHWM:"); ok {
			var kb float64
			fmt.Sscanf(strings.TrimSpace(v), "%f", &kb)
			return kb / 1024
		}
	}
	return 0
}

type result struct {
	lib, file   string
	mb          float64
	cpu, setup  float64 // seconds
	rssMB       float64
	err         string
	recall      float64
	order       float64
	lig, hyph   int
	words, refN int
	rep         childReport // what a child of this command printed
}

func run(corpus, out, cache string, libs []string, timeout time.Duration) error {
	files, err := filepath.Glob(filepath.Join(corpus, "*.pdf"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("no PDFs in %s", corpus)
	}
	sort.Strings(files)
	if err := os.MkdirAll(out, 0o755); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	// A first child fills the compilation cache, so that no file pays it;
	// its cost is reported on its own.
	if err := os.MkdirAll(cache, 0o755); err != nil {
		return err
	}
	cold, err := coldCompile(self, cache, files[0])
	if err != nil {
		return err
	}
	fmt.Printf("PDFium module compile (cold cache): %.2f s CPU\n\n", cold)

	var results []result
	for _, f := range files {
		st, _ := os.Stat(f)
		mb := float64(st.Size()) / (1 << 20)
		base := strings.TrimSuffix(filepath.Base(f), ".pdf")
		ref := filepath.Join(out, base+".pdftotext.txt")
		r := measure(timeout, "pdftotext", f, mb, "pdftotext", "-enc", "UTF-8", f, ref)
		results = append(results, r)
		refText, _ := os.ReadFile(ref)
		lay := filepath.Join(out, base+".pdftotext-layout.txt")
		results = append(results, measure(timeout, "pdftotext -layout", f, mb, "pdftotext", "-layout", "-enc", "UTF-8", f, lay))
		for _, lib := range libs {
			o := filepath.Join(out, base+"."+lib+".txt")
			results = append(results, measure(timeout, lib, f, mb, self, "-child", lib, "-cache", cache, "-in", f, "-o", o))
		}
		for i := range results {
			if results[i].file != f {
				continue
			}
			var o string
			switch results[i].lib {
			case "pdftotext":
				o = ref
			case "pdftotext -layout":
				o = lay
			default:
				o = filepath.Join(out, base+"."+results[i].lib+".txt")
			}
			text, _ := os.ReadFile(o)
			score(&results[i], string(refText), string(text))
		}
	}
	printTables(results, files)
	return nil
}

func coldCompile(self, cache, file string) (float64, error) {
	dir, err := os.MkdirTemp("", "pdfcompare-cold")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	r := measure(time.Minute, "pdfium", file, 0, self, "-child", "pdfium", "-cache", dir, "-in", file, "-o", os.DevNull)
	// Fill the real cache too, for both builds of the module.
	for _, lib := range []string{"pdfium", "pdfium-interruptible"} {
		measure(time.Minute, lib, file, 0, self, "-child", lib, "-cache", cache, "-in", file, "-o", os.DevNull)
	}
	if r.err != "" {
		return 0, fmt.Errorf("pdfium child: %s", r.err)
	}
	return r.setup, nil
}

func measure(timeout time.Duration, lib, file string, mb float64, name string, args ...string) result {
	r := result{lib: lib, file: file, mb: mb}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	// Not rusage's Maxrss: Go starts a child with vfork, so the child's
	// Maxrss starts at this process's own peak. VmHWM belongs to the
	// child's own address space; it only grows, so the last sample is
	// close to the peak (a Go child also reports its own at its end).
	var hwm float64
	err := cmd.Start()
	if err == nil {
		done := make(chan struct{})
		go func() {
			defer close(done)
			for {
				if v := vmHWM(cmd.Process.Pid); v > 0 {
					hwm = max(hwm, v)
				} else {
					return
				}
				time.Sleep(5 * time.Millisecond)
			}
		}()
		err = cmd.Wait()
		<-done
	}
	if cmd.ProcessState != nil {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		r.cpu = tv(ru.Utime) + tv(ru.Stime)
	}
	r.rssMB = hwm
	if err != nil {
		msg := strings.TrimSpace(stderr.String())
		if i := strings.IndexByte(msg, '\n'); i > 0 {
			msg = msg[:i]
		}
		r.err = fmt.Sprintf("%v %s", err, msg)
	}
	var rep childReport
	if json.Unmarshal(stdout.Bytes(), &rep) == nil && rep.ExtractCPU > 0 {
		r.rep = rep
		r.cpu, r.setup = rep.ExtractCPU, rep.SetupCPU
		r.rssMB = max(r.rssMB, rep.PeakRSSMB)
	}
	return r
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

func selfCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return tv(ru.Utime) + tv(ru.Stime)
}

// treeCPU is the CPU seconds of this process and of its children, the
// Reader's workers: those reaped from rusage, those alive from /proc.
func treeCPU() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru)
	t := selfCPU() + tv(ru.Utime) + tv(ru.Stime)
	for _, pid := range children() {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			continue
		}
		// Fields 14 and 15 (utime, stime) in clock ticks, counted after
		// the command name, which ends at the last ')'.
		f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
		if len(f) > 12 {
			var u, s float64
			fmt.Sscan(f[11], &u)
			fmt.Sscan(f[12], &s)
			t += (u + s) / 100 // USER_HZ
		}
	}
	return t
}

// children are this process's live child processes.
func children() []int {
	var pids []int
	tasks, _ := filepath.Glob("/proc/self/task/*/children")
	for _, f := range tasks {
		b, _ := os.ReadFile(f)
		for _, p := range strings.Fields(string(b)) {
			var pid int
			fmt.Sscan(p, &pid)
			pids = append(pids, pid)
		}
	}
	return pids
}

// childrenHWM is the largest peak RSS of the live children in MB.
func childrenHWM() float64 {
	var m float64
	for _, pid := range children() {
		m = max(m, vmHWM(pid))
	}
	return m
}

func runChild(lib, in, out, cache string) error {
	data, err := os.ReadFile(in)
	if err != nil {
		return err
	}
	var rep childReport
	var text string
	switch lib {
	case "pdfium", "pdfium-interruptible":
		t0 := selfCPU()
		inst, closeFn, err := pdfiumInstance(cache, lib == "pdfium-interruptible")
		if err != nil {
			return err
		}
		defer closeFn()
		t1 := selfCPU()
		text, err = pdfiumText(inst, data)
		rep.SetupCPU, rep.ExtractCPU = t1-t0, selfCPU()-t1
		if err != nil {
			return err
		}
	case "ledongthuc":
		t0 := selfCPU()
		text, err = ledongthucText(data)
		rep.ExtractCPU = selfCPU() - t0
		if err != nil {
			return err
		}
	case "reader":
		// The reader crawlspace ships: PDFium plus its line joining,
		// hyphen and ligature handling.
		r := pdfreader.NewReader(pdfreader.Config{CacheDir: cache})
		defer r.Close()
		t0 := treeCPU()
		// A first Read starts a worker, which compiles PDFium or loads it
		// from the cache.
		r.Read(context.Background(), []byte("%PDF-1.4"), document.Limits{})
		t1 := treeCPU()
		c, err := r.Read(context.Background(), data, document.Limits{MaxText: 1 << 30})
		rep.SetupCPU, rep.ExtractCPU = t1-t0, treeCPU()-t1
		rep.PeakRSSMB = childrenHWM()
		if err != nil {
			return err
		}
		text = c.Body
	default:
		return fmt.Errorf("unknown extractor %q", lib)
	}
	if err := os.WriteFile(out, []byte(text), 0o644); err != nil {
		return err
	}
	rep.PeakRSSMB = vmHWM(os.Getpid())
	return json.NewEncoder(os.Stdout).Encode(rep)
}

// pdfiumInstance is PDFium in wazero with no directory mounts and its
// output discarded; interruptible is wazero's WithCloseOnContextDone,
// which document/pdf sets so that a call can be stopped when ctx ends: its
// checks in every loop and function cost CPU, which the
// "pdfium-interruptible" column measures.
func pdfiumInstance(cache string, interruptible bool) (pdfium.Pdfium, func(), error) {
	cc, err := wazero.NewCompilationCacheWithDir(cache)
	if err != nil {
		return nil, nil, err
	}
	pool, err := webassembly.Init(webassembly.Config{
		MinIdle: 1, MaxIdle: 1, MaxTotal: 1,
		FSConfig: wazero.NewFSConfig(),
		Stdout:   io.Discard, Stderr: io.Discard,
		RuntimeConfig: wazero.NewRuntimeConfig().
			WithCoreFeatures(api.CoreFeaturesV2 | experimental.CoreFeaturesExceptionHandling).
			WithCloseOnContextDone(interruptible).
			WithCompilationCache(cc),
	})
	if err != nil {
		return nil, nil, err
	}
	inst, err := pool.GetInstance(time.Minute)
	if err != nil {
		pool.Close()
		return nil, nil, err
	}
	return inst, func() { inst.Close(); pool.Close() }, nil
}

// pdfiumText is PDFium's own text of each page (FPDFText_GetText), pages
// separated by a blank line.
func pdfiumText(inst pdfium.Pdfium, data []byte) (string, error) {
	doc, err := inst.OpenDocument(&requests.OpenDocument{File: &data})
	if err != nil {
		return "", err
	}
	defer inst.FPDF_CloseDocument(&requests.FPDF_CloseDocument{Document: doc.Document})
	n, err := inst.FPDF_GetPageCount(&requests.FPDF_GetPageCount{Document: doc.Document})
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := 0; i < n.PageCount; i++ {
		page, err := inst.FPDF_LoadPage(&requests.FPDF_LoadPage{Document: doc.Document, Index: i})
		if err != nil {
			return "", err
		}
		t, err := pageText(inst, page.Page)
		inst.FPDF_ClosePage(&requests.FPDF_ClosePage{Page: page.Page})
		if err != nil {
			return "", err
		}
		b.WriteString(t)
		b.WriteString("\n\n")
	}
	return b.String(), nil
}

func pageText(inst pdfium.Pdfium, page references.FPDF_PAGE) (string, error) {
	tp, err := inst.FPDFText_LoadPage(&requests.FPDFText_LoadPage{Page: requests.Page{ByReference: &page}})
	if err != nil {
		return "", err
	}
	defer inst.FPDFText_ClosePage(&requests.FPDFText_ClosePage{TextPage: tp.TextPage})
	cc, err := inst.FPDFText_CountChars(&requests.FPDFText_CountChars{TextPage: tp.TextPage})
	if err != nil || cc.Count <= 0 {
		return "", err
	}
	t, err := inst.FPDFText_GetText(&requests.FPDFText_GetText{TextPage: tp.TextPage, Count: cc.Count})
	if err != nil {
		return "", err
	}
	return t.Text, nil
}

// ledongthucText is ledongthuc/pdf's text from Page.Content, glyph by
// glyph in content-stream order: a line break where the baseline moves by
// more than half the font size, a space where the gap to the previous
// glyph is wider than a sixth of it. Its GetPlainText and GetTextByRow
// glue TeX's words together (TeX spaces words with TJ offsets, not space
// characters), which would be unfair to it.
func ledongthucText(data []byte) (text string, err error) {
	defer func() {
		if p := recover(); p != nil {
			err = fmt.Errorf("panic: %v", p)
		}
	}()
	r, err := ledong.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for i := 1; i <= r.NumPage(); i++ {
		p := r.Page(i)
		if p.V.IsNull() {
			continue
		}
		var end, y float64
		for j, t := range p.Content().Text {
			fs := max(t.FontSize, 1)
			switch {
			case j == 0:
			case math.Abs(t.Y-y) > fs/2:
				b.WriteByte('\n')
			case t.X-end > fs/6:
				b.WriteByte(' ')
			}
			b.WriteString(t.S)
			end, y = t.X+t.W, t.Y
		}
		b.WriteString("\n\n")
	}
	return b.String(), nil
}

var hyphRE = regexp.MustCompile(`([\p{L}]+)[-\x{2010}\x{00AD}\x{0002}]\r?\n\s*([\p{L}]+)`)

func score(r *result, ref, text string) {
	rw, tw := wordmatch.Words(ref), wordmatch.Words(text)
	r.refN, r.words = len(rw), len(tw)
	if len(rw) == 0 {
		return
	}
	r.recall, r.order = wordmatch.Recall(rw, tw), wordmatch.Order(rw, tw)
	for _, c := range text {
		if c >= 0xFB00 && c <= 0xFB06 {
			r.lig++
		}
	}
	refSet := map[string]bool{}
	for _, w := range rw {
		refSet[w] = true
	}
	for _, m := range hyphRE.FindAllStringSubmatch(text, -1) {
		if refSet[strings.ToLower(m[1]+m[2])] {
			r.hyph++
		}
	}
}

func printTables(results []result, files []string) {
	libs := []string{}
	seen := map[string]bool{}
	for _, r := range results {
		if !seen[r.lib] {
			seen[r.lib] = true
			libs = append(libs, r.lib)
		}
	}
	fmt.Println("Per file: recall / order / ligatures / hyphen-broken / CPU s / peak RSS MB")
	fmt.Println()
	fmt.Printf("| file | MB | pages |")
	for _, l := range libs {
		fmt.Printf(" %s |", l)
	}
	fmt.Println()
	fmt.Print("|---|---|---|")
	for range libs {
		fmt.Print("---|")
	}
	fmt.Println()
	for _, f := range files {
		fmt.Printf("| %s | %.2f | %s |", filepath.Base(f), mbOf(results, f), pages(f))
		for _, l := range libs {
			for _, r := range results {
				if r.file == f && r.lib == l {
					if r.err != "" {
						fmt.Printf(" error: %s |", trunc(r.err, 60))
						continue
					}
					fmt.Printf(" %.3f / %.3f / %d / %d / %.2f / %.0f |", r.recall, r.order, r.lig, r.hyph, r.cpu, r.rssMB)
				}
			}
		}
		fmt.Println()
	}
	fmt.Println()
	fmt.Println("| extractor | word recall (mean, min) | bigram order (mean, min) | ligatures left | hyphen-broken words | CPU s/MB (all files) | peak RSS MB (max) | setup CPU s | failures |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, l := range libs {
		var n, fails, lig, hyph int
		var sr, so, cpu, mb, rss, setup float64
		minR, minO := 1.0, 1.0
		for _, r := range results {
			if r.lib != l {
				continue
			}
			if r.err != "" {
				fails++
				continue
			}
			n++
			sr += r.recall
			so += r.order
			minR, minO = min(minR, r.recall), min(minO, r.order)
			lig += r.lig
			hyph += r.hyph
			cpu += r.cpu
			mb += r.mb
			rss = max(rss, r.rssMB)
			setup = max(setup, r.setup)
		}
		if n == 0 {
			fmt.Printf("| %s | | | | | | | | %d |\n", l, fails)
			continue
		}
		fmt.Printf("| %s | %.3f, %.3f | %.3f, %.3f | %d | %d | %.2f | %.0f | %.2f | %d |\n",
			l, sr/float64(n), minR, so/float64(n), minO, lig, hyph, cpu/mb, rss, setup, fails)
	}
}

func mbOf(results []result, f string) float64 {
	for _, r := range results {
		if r.file == f {
			return r.mb
		}
	}
	return 0
}

func pages(f string) string {
	out, err := exec.Command("pdfinfo", f).Output()
	if err != nil {
		return "?"
	}
	for _, l := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(l, "Pages:"); ok {
			return strings.TrimSpace(v)
		}
	}
	return "?"
}

func trunc(s string, n int) string {
	if len(s) > n {
		return s[:n] + "…"
	}
	return s
}
