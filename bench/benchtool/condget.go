package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
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
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *base == "" {
		return errors.New("usage: benchtool condget -url BASE [-concurrency C]")
	}
	res, err := condGet(strings.TrimRight(*base, "/"), max(*conc, 1))
	if err != nil {
		return err
	}
	return printJSON(&res)
}

func condGet(root string, conc int) (CondGetResult, error) {
	tr := &http.Transport{MaxIdleConns: conc, MaxIdleConnsPerHost: conc, DisableCompression: true}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: time.Minute}
	return checkEach(client, root, conc, func(p validated) (int, error) {
		req, _ := http.NewRequest(http.MethodGet, root+p.url, nil)
		req.Header.Set("If-None-Match", p.etag)
		req.Header.Set("If-Modified-Since", p.modified)
		resp, err := client.Do(req)
		if err != nil {
			return 0, err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode, nil
	})
}

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
