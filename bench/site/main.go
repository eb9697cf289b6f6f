// Command site serves the benchmark's synthetic web site on loopback: N
// deterministic pages of about 30 KB and 80 links each, rendered on the fly
// from the path, with ETag and Last-Modified validators and a robots.txt
// that allows everything.
//
//	go run ./bench/site -pages 10000 -addr 127.0.0.1:0 -url-file /tmp/site.url
//
// It prints the base URL on its first stdout line (and writes it to
// -url-file) once it accepts connections, and serves its request counts as
// JSON at /_bench/stats.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:0", "listen address (port 0 picks a free port)")
	pages := flag.Int("pages", 10000, "number of pages")
	seed := flag.Uint64("seed", 1, "seed of the generated site")
	urlFile := flag.String("url-file", "", "write the base URL to this file once listening")
	flag.Parse()
	if *pages < 1 {
		log.Fatal("site: -pages must be at least 1")
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatalf("site: %v", err)
	}
	base := "http://" + ln.Addr().String()
	h := NewHandler(NewSite(*pages, *seed))
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		shut, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(shut)
	}()
	fmt.Println(base)
	if *urlFile != "" {
		// Written under another name and renamed, so a reader never sees half a URL.
		tmp := *urlFile + ".tmp"
		if err := os.WriteFile(tmp, []byte(base+"\n"), 0o644); err != nil {
			log.Fatalf("site: %v", err)
		}
		if err := os.Rename(tmp, *urlFile); err != nil {
			log.Fatalf("site: %v", err)
		}
	}
	if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("site: %v", err)
	}
}
