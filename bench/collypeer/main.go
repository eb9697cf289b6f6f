// Command collypeer is the benchmark's plain colly crawler: what a colly
// user writes first. It keeps colly's defaults (its HTTP client, its
// visited-URL set, goquery parsing of every page, robots.txt ignored as
// colly does by default) and adds only what a fair comparison needs: Async
// with a LimitRule whose Parallelism is the benchmark's concurrency, the
// start URL's host only, fragments stripped before a URL is visited, and
// each URL visited once.
//
// The last needs a set of our own: colly 2.3's visited check is two steps
// (IsVisited, then Visited) with no lock between them, so under Async two
// workers that find the same link both fetch it; on the benchmark site that
// more than doubled colly's requests. A comparison of crawlers over the same
// pages must not charge colly for that race.
//
//	collypeer -url http://127.0.0.1:8080/ -concurrency 16
//
// It prints one JSON line: pages (unique URLs of HTML responses with status
// 200), errors and seconds.
package main

import (
	"encoding/json"
	"flag"
	"log"
	"net/url"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gocolly/colly/v2"
)

func main() {
	start := flag.String("url", "", "start URL")
	concurrency := flag.Int("concurrency", 16, "requests in flight")
	flag.Parse()
	u, err := url.Parse(*start)
	if err != nil || u.Host == "" {
		log.Fatalf("collypeer: -url %q is not an absolute URL", *start)
	}
	c := colly.NewCollector(colly.Async(true), colly.AllowedDomains(u.Hostname()))
	if err := c.Limit(&colly.LimitRule{DomainGlob: "*", Parallelism: *concurrency}); err != nil {
		log.Fatalf("collypeer: %v", err)
	}
	var pages, errs atomic.Int64
	var queued, fetched sync.Map
	c.OnResponse(func(r *colly.Response) {
		if r.StatusCode == 200 && strings.HasPrefix(r.Headers.Get("Content-Type"), "text/html") {
			if _, dup := fetched.LoadOrStore(r.Request.URL.String(), true); !dup {
				pages.Add(1)
			}
		}
	})
	c.OnError(func(*colly.Response, error) { errs.Add(1) })
	c.OnHTML("a[href]", func(e *colly.HTMLElement) {
		link := e.Request.AbsoluteURL(e.Attr("href"))
		if i := strings.IndexByte(link, '#'); i >= 0 {
			link = link[:i]
		}
		if link == "" {
			return
		}
		if _, dup := queued.LoadOrStore(link, true); dup {
			return
		}
		// Errors here are colly's filters at work (other host, bad scheme).
		_ = e.Request.Visit(link)
	})
	queued.Store(*start, true)
	began := time.Now()
	if err := c.Visit(*start); err != nil {
		log.Fatalf("collypeer: %v", err)
	}
	c.Wait()
	_ = json.NewEncoder(os.Stdout).Encode(map[string]any{
		"pages": pages.Load(), "errors": errs.Load(), "seconds": time.Since(began).Seconds(),
	})
}
