package main

import (
	"context"
	"errors"
	"flag"
	"net/http"
	"strings"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider/fetch"
	"github.com/crawlspace/crawlspace/rules"
)

// runRecheck is the bare client's requests made by crawlspace's own fetch
// layer: each page's conditional GET as an aged check sends it (the
// source's transport, headers, timeout, body decoding and limits), with no
// store, rules, robots.txt or report around it. Beside the bare client and
// the re-crawl, it splits the re-crawl's distance from its limit into the
// fetch layer's share and the rest of the crawler's.
func runRecheck(args []string) error {
	fs := flag.NewFlagSet("recheck", flag.ContinueOnError)
	cfgPath := fs.String("config", "", "a crawlspace configuration; its first source's fetch layer makes the requests")
	base := fs.String("url", "", "the site's base URL (http://127.0.0.1:PORT)")
	conc := fs.Int("concurrency", 16, "requests in flight")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *cfgPath == "" || *base == "" {
		return errors.New("usage: benchtool recheck -config F -url BASE [-concurrency C]")
	}
	res, err := recheck(*cfgPath, strings.TrimRight(*base, "/"), max(*conc, 1))
	if err != nil {
		return err
	}
	return printJSON(&res)
}

func recheck(cfgPath, root string, conc int) (CondGetResult, error) {
	cfg, err := config.Load(cfgPath)
	if err != nil {
		return CondGetResult{}, err
	}
	set, err := rules.Compile(cfg)
	if err != nil {
		return CondGetResult{}, err
	}
	src, err := fetch.New(cfg, &cfg.Sources[0], set.Sources()[0], fetch.Options{})
	if err != nil {
		return CondGetResult{}, err
	}
	ctx := context.Background()
	list := &http.Client{Timeout: time.Minute}
	return checkEach(list, root, conc, func(p validated) (int, error) {
		hdr := make(http.Header, 4)
		hdr.Set("If-None-Match", p.etag)
		hdr.Set("If-Modified-Since", p.modified)
		res := src.Page(ctx, root+p.url, hdr)
		return res.Status, res.Err
	})
}
