package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// CondGetResult is the physical limit of an aged check on the benchmark's
// site: every page asked for with its validators, nothing else done.
type CondGetResult struct {
	Requests    int64   `json:"requests"`
	NotModified int64   `json:"not_modified"`
	OK          int64   `json:"ok"`
	Other       int64   `json:"other"`
	Seconds     float64 `json:"seconds"`
	CPUSeconds  float64 `json:"cpu_seconds"`
	Rate        float64 `json:"requests_per_second"`
	Concurrency int     `json:"concurrency"`
	// WorkMicros is the CPU each check spent after its answer (-work).
	WorkMicros float64 `json:"work_us_per_check,omitempty"`
	// SiteCPUSeconds is what the site's process (-site-pid) used meanwhile.
	SiteCPUSeconds float64 `json:"site_cpu_seconds,omitempty"`
}

// runCondGet is the bare conditional-GET client beside the re-crawl: it reads
// every page's URL and validators from the site (bench/site's
// /_bench/validators: what a crawler that has seen the site keeps), then,
// timed from the first request to the last answer, sends each page one GET
// with If-None-Match and If-Modified-Since, -concurrency at a time over
// keep-alive connections, and reads each answer to its end. No parsing, no
// store, no rules: the rate is what the site and the loopback allow.
func runCondGet(args []string) error {
	fs := flag.NewFlagSet("condget", flag.ContinueOnError)
	base := fs.String("url", "", "the site's base URL (http://127.0.0.1:PORT)")
	conc := fs.Int("concurrency", 16, "requests in flight")
	work := fs.Duration("work", 0, "CPU time each worker spends after each answer, as a crawler's bookkeeping would")
	sitePID := fs.String("site-pid", "", "the site's process: report the CPU it used during the checks")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" {
		return errors.New("usage: benchtool condget -url BASE [-concurrency C] [-work D] [-site-pid PID]")
	}
	var site0 float64
	if *sitePID != "" {
		var err error
		if site0, err = procCPU(*sitePID); err != nil {
			return err
		}
	}
	res, err := condGet(strings.TrimRight(*base, "/"), max(*conc, 1), *work)
	if err != nil {
		return err
	}
	if *sitePID != "" {
		// The list of validators is read before the checks, so this
		// includes the site's work to list them: small beside the checks.
		site1, err := procCPU(*sitePID)
		if err != nil {
			return err
		}
		res.SiteCPUSeconds = site1 - site0
	}
	return printJSON(&res)
}

// condGet checks every page of the site at root; work > 0 spends that much
// of the worker's CPU after each answer, which shows what bookkeeping of
// any kind costs the rate (docs/frontier.md, "The re-crawl's cost").
func condGet(root string, conc int, work time.Duration) (CondGetResult, error) {
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	res, err := checkEach(client, root, conc, func(p validated) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, root+p.url, nil)
		req.Header.Set("If-None-Match", p.etag)
		req.Header.Set("If-Modified-Since", p.modified)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		spendCPU(work)
		return resp.StatusCode, nil
	})
	if work > 0 {
		res.WorkMicros = float64(work) / float64(time.Microsecond)
	}
	return res, err
}

// spendCPU keeps the calling thread busy until it has used d of CPU time:
// the thread's own clock, so time the scheduler gives to others (the site)
// does not count as work done.
func spendCPU(d time.Duration) {
	if d <= 0 {
		return
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	x := uint64(d)
	for end := threadCPU() + d; threadCPU() < end; {
		// About a microsecond of arithmetic between two reads of the clock.
		for range 256 {
			x = x*6364136223846793005 + 1442695040888963407
		}
	}
	spun.Add(x) // so the compiler keeps the arithmetic
}

func threadCPU() time.Duration {
	var ts unix.Timespec
	if unix.ClockGettime(unix.CLOCK_THREAD_CPUTIME_ID, &ts) != nil {
		return 0
	}
	return time.Duration(ts.Nano())
}

var spun atomic.Uint64

// checkEach reads the site's pages and validators, then, timed from the
// first check to the last answer, makes check of every page, conc at a time.
func checkEach(client *http.Client, root string, conc int, check func(validated) (int, error)) (CondGetResult, error) {
	res := CondGetResult{Concurrency: conc}
	pages, err := readValidators(client, root+"/_bench/validators")
	if err != nil {
		return res, err
	}
	work := make(chan int, conc)
	var wg sync.WaitGroup
	var firstErr atomic.Value
	cpu0 := cpuSeconds()
	start := time.Now()
	for range conc {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				status, err := check(pages[i])
				if err != nil {
					firstErr.CompareAndSwap(nil, err)
					continue
				}
				atomic.AddInt64(&res.Requests, 1)
				switch status {
				case http.StatusNotModified:
					atomic.AddInt64(&res.NotModified, 1)
				case http.StatusOK:
					atomic.AddInt64(&res.OK, 1)
				default:
					atomic.AddInt64(&res.Other, 1)
				}
			}
		}()
	}
	for i := range pages {
		work <- i
	}
	close(work)
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	res.CPUSeconds = cpuSeconds() - cpu0
	if res.Seconds > 0 {
		res.Rate = float64(res.Requests) / res.Seconds
	}
	if err, ok := firstErr.Load().(error); ok && err != nil {
		return res, fmt.Errorf("%d of %d requests failed, the first: %w", int64(len(pages))-res.Requests, len(pages), err)
	}
	return res, nil
}

type validated struct{ url, etag, modified string }

func readValidators(client *http.Client, url string) ([]validated, error) {
	resp, err := client.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	var out []validated
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		if len(f) != 3 {
			return nil, fmt.Errorf("%s: line %d: %q is not URL, ETag and date", url, len(out)+1, sc.Text())
		}
		out = append(out, validated{f[0], f[1], f[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s: no pages", url)
	}
	return out, nil
}

// cpuSeconds is the user and system time this process has used, so the
// result's CPU is the checking's, not the reading of the list's.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	tv := func(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }
	return tv(ru.Utime) + tv(ru.Stime)
}
