package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// Record is one run of one crawler: what bench/run measured and what the
// crawler and the site said about it.
type Record struct {
	Crawler string `json:"crawler"`
	Run     int    `json:"run"`
	// Status is "ok", "timeout", "failed (exit N)" or "n/a: why".
	Status string `json:"status"`
	// Pages is the crawler's own count of unique pages fetched.
	Pages int64 `json:"pages"`
	// Docs is documents written or indexed, where the crawler makes any.
	Docs     int64   `json:"docs,omitempty"`
	WallSec  float64 `json:"wall_s"`
	CPUSec   float64 `json:"cpu_s"`
	MaxRSSKB int64   `json:"max_rss_kb"`
	// PeakAnonKB is the process's peak anonymous memory (RssAnon, sampled by
	// memwatch): MaxRSSKB also counts the store's memory-mapped file pages.
	PeakAnonKB int64 `json:"peak_anon_kb,omitempty"`
	// StoreBytes is the size of the state directory on disk after the run.
	StoreBytes int64 `json:"store_bytes,omitempty"`
	// DiskWriteBytes is what the process wrote to disk (memwatch).
	DiskWriteBytes int64 `json:"disk_write_bytes,omitempty"`
	// Site is what the site server answered during the run.
	Site       SiteStats `json:"site"`
	SiteCPUSec float64   `json:"site_cpu_s"`
	ESCPUSec   float64   `json:"es_cpu_s,omitempty"`
	// IndexCount is the document count of the index after the run.
	IndexCount int64  `json:"index_count,omitempty"`
	Note       string `json:"note,omitempty"`
}

// SiteStats are the site server's counters (bench/site's /_bench/stats).
type SiteStats struct {
	OK          int64 `json:"ok"`
	NotModified int64 `json:"not_modified"`
	NotFound    int64 `json:"not_found"`
	Robots      int64 `json:"robots"`
	Other       int64 `json:"other"`
	Bytes       int64 `json:"bytes"`
}

func (a SiteStats) minus(b SiteStats) SiteStats {
	return SiteStats{a.OK - b.OK, a.NotModified - b.NotModified, a.NotFound - b.NotFound,
		a.Robots - b.Robots, a.Other - b.Other, a.Bytes - b.Bytes}
}

// crawler kinds: how each one's output is read.
const (
	kindCrawlspace = "crawlspace"
	kindRecrawl    = "recrawl"
	kindColly      = "colly"
	kindScrapy     = "scrapy"
	kindWget       = "wget"
	kindBulk       = "bulk"
	kindCondGet    = "condget"
)

func runRecord(args []string) error {
	fs := flag.NewFlagSet("record", flag.ContinueOnError)
	var r Record
	fs.StringVar(&r.Crawler, "crawler", "", "row name (crawlspace-file, colly, ...)")
	fs.IntVar(&r.Run, "run", 1, "run number")
	kind := fs.String("kind", "", "output format: crawlspace, recrawl, colly, scrapy, wget, bulk")
	output := fs.String("output", "", "the crawler's own output (report JSON, stats JSON, wget log)")
	timeFile := fs.String("time", "", "GNU time -v output")
	rc := fs.Int("rc", 0, "exit code of the measured command")
	timedOut := fs.Bool("timed-out", false, "the command hit its time cap")
	siteBefore := fs.String("site-before", "", "site stats JSON before the run")
	siteAfter := fs.String("site-after", "", "site stats JSON after the run")
	siteCPU := fs.Float64("site-cpu", 0, "CPU seconds the site server used during the run")
	esCPU := fs.Float64("es-cpu", 0, "CPU seconds the Elasticsearch node used during the run")
	indexCount := fs.Int64("index-count", 0, "documents in the index after the run")
	status := fs.String("status", "", "set the status (n/a: why) instead of deriving it")
	note := fs.String("note", "", "a note for the row")
	memFile := fs.String("mem", "", "benchtool memwatch's JSON for the run")
	fs.Int64Var(&r.StoreBytes, "store-bytes", 0, "bytes of the state directory after the run")
	if err := fs.Parse(args); err != nil {
		return err
	}
	r.SiteCPUSec, r.ESCPUSec, r.IndexCount, r.Note = *siteCPU, *esCPU, *indexCount, *note
	if *siteBefore != "" && *siteAfter != "" {
		var a, b SiteStats
		if err := readJSON(*siteBefore, &b); err != nil {
			return err
		}
		if err := readJSON(*siteAfter, &a); err != nil {
			return err
		}
		r.Site = a.minus(b)
	}
	switch {
	case *status != "":
		r.Status = *status
	case *timedOut:
		r.Status = "timeout"
	case *rc != 0:
		r.Status = fmt.Sprintf("failed (exit %d)", *rc)
	default:
		r.Status = "ok"
	}
	if *timeFile != "" {
		if t, err := parseGNUTime(*timeFile); err == nil {
			r.WallSec, r.CPUSec, r.MaxRSSKB = t.wall, t.user+t.sys, t.maxRSSKB
		} else if r.Status == "ok" {
			return err
		}
	}
	if *memFile != "" {
		var m MemPeak
		if err := readJSON(*memFile, &m); err == nil {
			r.PeakAnonKB, r.DiskWriteBytes = m.PeakAnonKB, m.WriteBytes
		}
	}
	if *output != "" && !strings.HasPrefix(r.Status, "n/a") {
		if err := readOutput(&r, *kind, *output); err != nil {
			if r.Status == "ok" {
				r.Status = "failed (no output)"
			}
			r.Note = strings.TrimSpace(r.Note + " " + err.Error())
		}
	}
	switch {
	case *kind != kindRecrawl || r.Status != "ok" || r.Site.NotModified > 0:
	case r.Site.OK == 0:
		r.Status = "n/a (no page was checked)"
		r.Note = strings.TrimSpace(r.Note + " the re-crawl requested no page although max_age made every page due")
	default:
		// Without a single 304 the "re-crawl" was a second full crawl, and
		// timing it as an aged check would be a fake number.
		r.Status = "n/a (not implemented yet)"
		r.Note = strings.TrimSpace(fmt.Sprintf("%s no request was answered 304: this re-crawl fetched %d pages in full in %.1f s",
			r.Note, r.Site.OK, r.WallSec))
	}
	return printJSON(&r)
}

func readJSON(path string, v any) error {
	raw, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(raw, v); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// readOutput fills Pages and Docs from the crawler's own account.
func readOutput(r *Record, kind, path string) error {
	switch kind {
	case kindCrawlspace, kindRecrawl:
		var rep struct {
			Total map[string]json.RawMessage `json:"total"`
		}
		if err := readJSON(path, &rep); err != nil {
			return err
		}
		n := func(k string) int64 {
			var v int64
			_ = json.Unmarshal(rep.Total[k], &v)
			return v
		}
		r.Pages = n("fetched")
		r.Docs = n("written") + n("created") + n("updated")
		if kind == kindRecrawl {
			// An aged check answered 304 is a page checked but not fetched
			// again; the site's count of both is the crawler-independent figure.
			r.Pages = r.Site.OK + r.Site.NotModified
			r.Docs = n("unchanged")
		}
	case kindColly, kindScrapy:
		var out struct {
			Pages int64 `json:"pages"`
		}
		if err := readJSON(path, &out); err != nil {
			return err
		}
		r.Pages = out.Pages
	case kindWget:
		n, err := wgetPages(path)
		if err != nil {
			return err
		}
		r.Pages = n
	case kindBulk:
		var out BulkResult
		if err := readJSON(path, &out); err != nil {
			return err
		}
		// The rate is the node's: the loader's own CPU and memory are not the measure.
		r.Pages, r.Docs, r.WallSec = out.Docs-out.Failed, out.Docs-out.Failed, out.Seconds
		r.CPUSec, r.MaxRSSKB, r.PeakAnonKB, r.DiskWriteBytes = 0, 0, 0, 0
		if out.Failed > 0 {
			r.Note = strings.TrimSpace(fmt.Sprintf("%s %d documents rejected", r.Note, out.Failed))
		}
	case kindCondGet:
		var out CondGetResult
		if err := readJSON(path, &out); err != nil {
			return err
		}
		// The rate and CPU are the checking's, from the first request to the
		// last answer; reading the list of validators before is not counted.
		r.Pages, r.WallSec, r.CPUSec = out.NotModified+out.OK, out.Seconds, out.CPUSeconds
	default:
		return fmt.Errorf("unknown kind %q", kind)
	}
	return nil
}

// wgetPages counts the distinct URLs wget's -nv log says it downloaded:
// lines like `2024-01-01 10:00:00 URL:http://host/a [123/123] -> "file" [1]`.
func wgetPages(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		k := bytes.Index(line, []byte(" URL:"))
		if k < 0 || !bytes.Contains(line, []byte(" -> ")) {
			continue
		}
		rest := line[k+5:]
		if sp := bytes.IndexByte(rest, ' '); sp >= 0 {
			rest = rest[:sp]
		}
		if bytes.HasSuffix(rest, []byte("/robots.txt")) {
			continue
		}
		seen[string(rest)] = true
	}
	return int64(len(seen)), sc.Err()
}

type gnuTime struct {
	wall, user, sys float64
	maxRSSKB        int64
}

// parseGNUTime reads the report of GNU time -v.
func parseGNUTime(path string) (gnuTime, error) {
	var t gnuTime
	raw, err := os.ReadFile(path)
	if err != nil {
		return t, err
	}
	found := 0
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, ok := strings.Cut(strings.TrimSpace(line), ": ")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch {
		case key == "User time (seconds)":
			t.user, err = strconv.ParseFloat(val, 64)
			found++
		case key == "System time (seconds)":
			t.sys, err = strconv.ParseFloat(val, 64)
			found++
		case key == "Maximum resident set size (kbytes)":
			t.maxRSSKB, err = strconv.ParseInt(val, 10, 64)
			found++
		case strings.HasPrefix(key, "Elapsed (wall clock) time"):
			t.wall, err = parseClock(val)
			found++
		}
		if err != nil {
			return t, fmt.Errorf("%s: %q: %w", path, line, err)
		}
	}
	if found < 4 {
		return t, fmt.Errorf("%s: not a GNU time -v report", path)
	}
	return t, nil
}

// parseClock parses GNU time's elapsed time: "m:ss.cc" or "h:mm:ss".
func parseClock(s string) (float64, error) {
	parts := strings.Split(s, ":")
	if len(parts) < 2 || len(parts) > 3 {
		return 0, errors.New("want m:ss or h:mm:ss")
	}
	var total float64
	for _, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return 0, err
		}
		total = total*60 + v
	}
	return total, nil
}

func runProcCPU(args []string) error {
	if len(args) != 1 {
		return errors.New("usage: benchtool proccpu PID")
	}
	sec, err := procCPU(args[0])
	if err != nil {
		return err
	}
	fmt.Printf("%.2f\n", sec)
	return nil
}

// procCPU is the user plus system time of a running process, from
// /proc/PID/stat (fields 14 and 15, in clock ticks of 1/100 s on Linux).
func procCPU(pid string) (float64, error) {
	raw, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, err
	}
	// The command name may hold spaces and parentheses; fields start after the last ")".
	k := bytes.LastIndexByte(raw, ')')
	if k < 0 {
		return 0, errors.New("unexpected /proc stat format")
	}
	fields := strings.Fields(string(raw[k+1:]))
	if len(fields) < 13 {
		return 0, errors.New("unexpected /proc stat format")
	}
	utime, err1 := strconv.ParseFloat(fields[11], 64)
	stime, err2 := strconv.ParseFloat(fields[12], 64)
	if err1 != nil || err2 != nil {
		return 0, errors.New("unexpected /proc stat format")
	}
	return (utime + stime) / 100, nil
}
