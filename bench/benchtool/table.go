package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// rows lists the table's rows in order; the first is the reference the
// ratio columns divide by.
var rows = []struct{ id, label string }{
	{"crawlspace-file", "crawlspace → file sink"},
	{"crawlspace-es", "crawlspace → Elasticsearch"},
	{"crawlspace-es-pinned", "crawlspace → Elasticsearch, pinned (node on one core, crawler and site on the other)"},
	{"crawlspace-recrawl", "crawlspace re-crawl, unchanged site (validators)"},
	{"condget", "bare conditional-GET client, same concurrency (the re-crawl's limit)"},
	{"crawlspace-fetch", "the same requests through crawlspace's fetch layer alone (no store)"},
	{"es-bulk", "Elasticsearch `_bulk` of the same documents (ceiling)"},
	{"es-bulk-pinned", "Elasticsearch `_bulk` ceiling, pinned (node on one core, loader on the other)"},
	{"colly", "colly, plain program"},
	{"scrapy", "Scrapy"},
	{"wget", "wget --recursive (fetch-only floor)"},
}

const reference = "crawlspace-file"

// summary is a row's medians over its successful runs.
type summary struct {
	id, label string
	runs      []Record
	ok        []Record
	pages     float64
	wall      float64
	rate      float64 // pages per second
	cpuPer1k  float64 // CPU seconds per 1,000 pages
	rssMB     float64
	anonMB    float64
	storeMB   float64
	notes     []string
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if n := len(s); n%2 == 1 {
		return s[n/2]
	} else {
		return (s[n/2-1] + s[n/2]) / 2
	}
}

func summarise(id, label string, runs []Record, expected int64) *summary {
	s := &summary{id: id, label: label, runs: runs}
	var pages, wall, rate, cpu, rss, anon, store []float64
	statuses := map[string]int{}
	var notes []string
	for _, r := range runs {
		if r.Note != "" && !contains(notes, r.Note) {
			notes = append(notes, r.Note)
		}
		if r.Status != "ok" {
			statuses[r.Status]++
			if r.Status == "timeout" && r.Pages > 0 {
				notes = append(notes, fmt.Sprintf("run %d: %d pages when the cap of %.0f s stopped it", r.Run, r.Pages, r.WallSec))
			}
			continue
		}
		s.ok = append(s.ok, r)
		pages = append(pages, float64(r.Pages))
		wall = append(wall, r.WallSec)
		if r.WallSec > 0 {
			rate = append(rate, float64(r.Pages)/r.WallSec)
		}
		if r.Pages > 0 && r.CPUSec > 0 {
			cpu = append(cpu, r.CPUSec/float64(r.Pages)*1000)
		}
		if r.MaxRSSKB > 0 {
			rss = append(rss, float64(r.MaxRSSKB)/1024)
		}
		if r.PeakAnonKB > 0 {
			anon = append(anon, float64(r.PeakAnonKB)/1024)
		}
		if r.StoreBytes > 0 {
			store = append(store, float64(r.StoreBytes)/(1<<20))
		}
	}
	s.pages, s.wall, s.rate, s.cpuPer1k, s.rssMB = median(pages), median(wall), median(rate), median(cpu), median(rss)
	s.anonMB, s.storeMB = median(anon), median(store)
	for st, n := range statuses {
		if len(s.ok) > 0 {
			s.notes = append(s.notes, fmt.Sprintf("%d of %d runs: %s", n, len(runs), st))
		}
	}
	if len(s.ok) > 0 {
		s.checkCounts(expected)
	}
	s.notes = append(s.notes, notes...)
	return s
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// checkCounts flags a row whose page counts do not agree with the site or
// with its own documents: a comparison of speeds is only fair over the same
// pages.
func (s *summary) checkCounts(expected int64) {
	off := func(got, want int64) bool {
		return want > 0 && math.Abs(float64(got-want)) > math.Max(1, 0.01*float64(want))
	}
	var flagged []string
	var notFound, notModified, ok, robots, esCPU []float64
	for _, r := range s.ok {
		if off(r.Pages, expected) {
			flagged = append(flagged, fmt.Sprintf("run %d: %d pages", r.Run, r.Pages))
		}
		if s.id == "crawlspace-file" || s.id == "crawlspace-es" || s.id == "crawlspace-es-pinned" {
			if off(r.Docs, r.Pages) {
				flagged = append(flagged, fmt.Sprintf("run %d: %d documents for %d pages", r.Run, r.Docs, r.Pages))
			}
		}
		if r.IndexCount > 0 && off(r.IndexCount, r.Pages) {
			flagged = append(flagged, fmt.Sprintf("run %d: index holds %d documents", r.Run, r.IndexCount))
		}
		notFound = append(notFound, float64(r.Site.NotFound))
		notModified = append(notModified, float64(r.Site.NotModified))
		ok = append(ok, float64(r.Site.OK))
		robots = append(robots, float64(r.Site.Robots))
		esCPU = append(esCPU, r.ESCPUSec)
	}
	if len(flagged) > 0 {
		s.notes = append(s.notes, fmt.Sprintf("⚠ counts disagree (site has %d pages): %s", expected, strings.Join(flagged, "; ")))
	}
	if n := median(notFound); n > 0 {
		s.notes = append(s.notes, fmt.Sprintf("site answered %.0f× 404", n))
	}
	if s.id == "crawlspace-recrawl" || s.id == "condget" || s.id == "crawlspace-fetch" {
		s.notes = append(s.notes, fmt.Sprintf("site answered %.0f× 304, %.0f× 200", median(notModified), median(ok)))
	} else if !strings.HasPrefix(s.id, "es-bulk") {
		if extra := median(ok) - float64(expected); extra > 0.01*float64(expected) {
			s.notes = append(s.notes, fmt.Sprintf("site served %.0f pages (some more than once)", median(ok)))
		}
	}
	if s.id == "crawlspace-file" || strings.HasPrefix(s.id, "crawlspace-es") {
		if median(robots) == 0 {
			s.notes = append(s.notes, "robots.txt was never fetched")
		}
	}
	if c := median(esCPU); c > 0 && (strings.HasPrefix(s.id, "crawlspace-es") || strings.HasPrefix(s.id, "es-bulk")) {
		s.notes = append(s.notes, fmt.Sprintf("Elasticsearch node CPU %.1f s", c))
	}
}

func runTable(args []string) error {
	fs := flag.NewFlagSet("table", flag.ContinueOnError)
	in := fs.String("in", "", "runs JSON lines from benchtool record")
	out := fs.String("out", "", "also write the Markdown here")
	expected := fs.Int64("pages", 0, "pages the site has")
	title := fs.String("title", "crawlspace benchmark", "heading")
	var header stringList
	fs.Var(&header, "line", "a line for the header (repeatable): machine, date, command")
	if err := fs.Parse(args); err != nil {
		return err
	}
	runs, err := readRecords(*in)
	if err != nil {
		return err
	}
	var sb strings.Builder
	writeTable(&sb, *title, header, runs, *expected)
	fmt.Print(sb.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(sb.String()), 0o644)
	}
	return nil
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, "\n") }
func (l *stringList) Set(v string) error { *l = append(*l, v); return nil }

func readRecords(path string) ([]Record, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var runs []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.TrimSpace(sc.Text()) == "" {
			continue
		}
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		runs = append(runs, r)
	}
	return runs, sc.Err()
}

func num(v float64, decimals int) string {
	if math.IsNaN(v) || math.IsInf(v, 0) || v == 0 {
		return "—"
	}
	s := strconv.FormatFloat(v, 'f', decimals, 64)
	// Thousands separators on the integer part, for page counts and rates.
	intPart, frac, _ := strings.Cut(s, ".")
	var b strings.Builder
	for k, c := range intPart {
		if k > 0 && (len(intPart)-k)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	if frac != "" {
		b.WriteString("." + frac)
	}
	return b.String()
}

func ratio(a, b float64) string {
	if math.IsNaN(a) || math.IsNaN(b) || b == 0 || a == 0 {
		return "—"
	}
	return strconv.FormatFloat(a/b, 'f', 2, 64) + "×"
}

func writeTable(w io.Writer, title string, header []string, runs []Record, expected int64) {
	byID := map[string][]Record{}
	for _, r := range runs {
		byID[r.Crawler] = append(byID[r.Crawler], r)
	}
	sums := map[string]*summary{}
	fmt.Fprintf(w, "## %s\n\n", title)
	for _, l := range header {
		fmt.Fprintf(w, "%s  \n", l)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| crawler | unique pages | wall s | pages/s | pages/s ÷ crawlspace | CPU s / 1k pages | CPU/page ÷ crawlspace | peak RSS MB | peak anon MB | store MB | notes |")
	fmt.Fprintln(w, "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
	for _, row := range rows {
		rs := byID[row.id]
		if len(rs) == 0 {
			continue
		}
		sums[row.id] = summarise(row.id, row.label, rs, expected)
	}
	ref := sums[reference]
	for _, row := range rows {
		s := sums[row.id]
		if s == nil {
			continue
		}
		if len(s.ok) == 0 {
			fmt.Fprintf(w, "| %s | %s | — | — | — | — | — | — | — | — | %s |\n", s.label, s.runs[0].Status, strings.Join(s.notes, "; "))
			continue
		}
		rateRatio, cpuRatio := "—", "—"
		if ref != nil && len(ref.ok) > 0 {
			rateRatio, cpuRatio = ratio(s.rate, ref.rate), ratio(s.cpuPer1k, ref.cpuPer1k)
		}
		fmt.Fprintf(w, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", s.label, num(s.pages, 0), num(s.wall, 1),
			num(s.rate, 0), rateRatio, num(s.cpuPer1k, 2), cpuRatio, num(s.rssMB, 0), num(s.anonMB, 0), num(s.storeMB, 0),
			strings.Join(s.notes, "; "))
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "Ratios divide the row's median by crawlspace → file sink's: pages/s above 1× is faster than crawlspace,")
	fmt.Fprintln(w, "CPU/page above 1× spends more CPU per page than crawlspace. CPU and peak RSS are the crawler process's")
	fmt.Fprintln(w, "(GNU time -v), not the site server's (in the run details) or Elasticsearch's (in the notes); peak RSS")
	fmt.Fprintln(w, "counts the store's memory-mapped pages, peak anon (RssAnon, sampled) what the process holds itself.")
	fmt.Fprintln(w, "Store MB is the state directory on disk after the run. The bare client's and the `_bulk` rows' CPU")
	fmt.Fprintln(w, "and time are from their first request to their last answer.")
	fmt.Fprintln(w)
	writeTargets(w, sums)
	writeRuns(w, runs)
}

func okSummary(s *summary) bool { return s != nil && len(s.ok) > 0 && !math.IsNaN(s.rate) }

func writeTargets(w io.Writer, sums map[string]*summary) {
	fmt.Fprintln(w, "### Targets")
	fmt.Fprintln(w)
	verdict := func(ok bool) string {
		if ok {
			return "**met**"
		}
		return "**missed**"
	}
	cs, colly := sums["crawlspace-file"], sums["colly"]
	if okSummary(cs) && okSummary(colly) {
		speed, cpu := cs.rate/colly.rate, cs.cpuPer1k/colly.cpuPer1k
		fmt.Fprintf(w, "- crawlspace → file sink vs plain colly: %.2f× its pages/s (target ≥ 2×) %s; %.2f× its CPU per page (target ≤ 0.5×) %s\n",
			speed, verdict(speed >= 2), cpu, verdict(cpu <= 0.5))
	} else {
		fmt.Fprintln(w, "- crawlspace → file sink vs plain colly: not measured (a row has no successful run)")
	}
	es, bulk := sums["crawlspace-es"], sums["es-bulk"]
	if okSummary(es) && okSummary(bulk) {
		share := es.rate / bulk.rate
		fmt.Fprintf(w, "- crawlspace → Elasticsearch: %.0f%% of the node's own `_bulk` rate for the same documents (target ≥ 80%%) %s\n",
			100*share, verdict(share >= 0.8))
	} else {
		fmt.Fprintln(w, "- crawlspace → Elasticsearch vs `_bulk`: not measured (a row has no successful run)")
	}
	esp, bulkp := sums["crawlspace-es-pinned"], sums["es-bulk-pinned"]
	if okSummary(esp) && okSummary(bulkp) {
		share := esp.rate / bulkp.rate
		fmt.Fprintf(w, "- crawlspace → Elasticsearch, pinned: %.0f%% of the node's own `_bulk` rate under the same pinning (target ≥ 90%%) %s\n",
			100*share, verdict(share >= 0.9))
	} else if esp != nil || bulkp != nil {
		fmt.Fprintln(w, "- crawlspace → Elasticsearch vs `_bulk`, pinned: not measured (a row has no successful run)")
	}
	re, cg := sums["crawlspace-recrawl"], sums["condget"]
	if okSummary(re) && okSummary(cg) {
		share := re.rate / cg.rate
		fmt.Fprintf(w, "- unchanged re-crawl: %.0f%% of the bare conditional-GET client's rate, with its durable updates (target ≥ 60%%) %s\n",
			100*share, verdict(share >= 0.6))
	}
	if fl := sums["crawlspace-fetch"]; okSummary(fl) && okSummary(cg) {
		fmt.Fprintf(w, "- crawlspace's fetch layer alone: %.0f%% of the bare client's rate", 100*fl.rate/cg.rate)
		if okSummary(re) {
			fmt.Fprintf(w, "; the re-crawl, with its store and bookkeeping, %.0f%% of the fetch layer's", 100*re.rate/fl.rate)
		}
		fmt.Fprintln(w)
	}
	switch {
	case okSummary(re) && okSummary(cs):
		speedup := cs.wall / re.wall
		fmt.Fprintf(w, "- unchanged re-crawl: %.1f× faster than the first crawl (target ≥ 10×) %s\n", speedup, verdict(speedup >= 10))
	case re != nil && len(re.runs) > 0:
		fmt.Fprintf(w, "- unchanged re-crawl: %s\n", re.runs[0].Status)
	default:
		fmt.Fprintln(w, "- unchanged re-crawl: not measured")
	}
	fmt.Fprintln(w, "- frontier (5 million URLs under 400 MB) and rule evaluation (1,000 rules under 5 µs per URL) are Go benchmarks in their packages, not part of this run")
	fmt.Fprintln(w)
}

func writeRuns(w io.Writer, runs []Record) {
	fmt.Fprintln(w, "<details><summary>Every run</summary>")
	fmt.Fprintln(w)
	fmt.Fprintln(w, "| crawler | run | status | pages | docs | wall s | CPU s | peak RSS MB | peak anon MB | store MB | disk written MB | site 200 / 304 / 404 | site CPU s | ES CPU s | index docs |")
	fmt.Fprintln(w, "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|")
	for _, r := range runs {
		fmt.Fprintf(w, "| %s | %d | %s | %d | %d | %.2f | %.2f | %.0f | %.0f | %.0f | %.0f | %d / %d / %d | %.2f | %.2f | %d |\n",
			r.Crawler, r.Run, r.Status, r.Pages, r.Docs, r.WallSec, r.CPUSec, float64(r.MaxRSSKB)/1024,
			float64(r.PeakAnonKB)/1024, float64(r.StoreBytes)/(1<<20), float64(r.DiskWriteBytes)/(1<<20),
			r.Site.OK, r.Site.NotModified, r.Site.NotFound, r.SiteCPUSec, r.ESCPUSec, r.IndexCount)
	}
	fmt.Fprintln(w)
	fmt.Fprintln(w, "</details>")
}
