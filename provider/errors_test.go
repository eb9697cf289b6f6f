package provider_test

import (
	"fmt"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/docfields"
	"github.com/crawlspace/crawlspace/frontier"
	"github.com/crawlspace/crawlspace/internal/estest"
	"github.com/crawlspace/crawlspace/provider"
)

// switchable serves an HTML page until set to answer with a status instead.
type switchable struct {
	mu     sync.Mutex
	status int
	header http.Header
}

func (s *switchable) set(status int, header http.Header) {
	s.mu.Lock()
	s.status, s.header = status, header
	s.mu.Unlock()
}

func (s *switchable) handler(title string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		status, header := s.status, s.header
		s.mu.Unlock()
		if status != 0 && status != http.StatusOK {
			for k, v := range header {
				w.Header()[k] = v
			}
			w.WriteHeader(status)
			return
		}
		htmlPage(title, "<p>"+title+"</p>")(w, r)
	}
}

func TestNotFoundAndGoneDeleteTheIndexedDocumentAtOnce(t *testing.T) {
	t.Parallel()
	esURL := estest.URL(t)
	index := estest.Index(t)
	site := newSite(t)
	var gone404, gone410 switchable
	site.html("/", "home", links("/a.html", "/b.html", "/keep.html"))
	site.handle("/a.html", gone404.handler("a"))
	site.handle("/b.html", gone410.handler("b"))
	site.html("/keep.html", "keep", "")
	// max_age 1ns: the second cycle checks every known page again.
	cfg, _ := testConfig(t, fmt.Sprintf("elasticsearch: {addresses: [%q], index: %s, replicas: 0}", esURL, index),
		"max_age: 1ns", site.URL+"/")

	c, first := crawlKeep(t, cfg)
	if first.Total.Created != 4 {
		t.Fatalf("first cycle created %d documents, want 4", first.Total.Created)
	}
	gone404.set(http.StatusNotFound, nil)
	gone410.set(http.StatusGone, nil)
	second := again(t, c)

	wantState(t, c, site.URL+"/a.html", frontier.Error, "http_404")
	wantState(t, c, site.URL+"/b.html", frontier.Error, "http_410")
	for _, p := range []string{"/a.html", "/b.html"} {
		if r := record(t, c, site.URL+p); r.Indexed || r.Pending != "" {
			t.Errorf("%s: indexed %v, pending %q after the delete", p, r.Indexed, r.Pending)
		}
	}
	if second.Total.Deleted != 2 {
		t.Errorf("second cycle deleted %d documents, want 2", second.Total.Deleted)
	}
	docs := searchAll(t, esURL, index)
	var ids []string
	for id := range docs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	want := []string{docfields.ID(site.URL + "/"), docfields.ID(site.URL + "/keep.html")}
	slices.Sort(want)
	if !slices.Equal(ids, want) {
		t.Errorf("index holds %v, want %v (home and keep only)", ids, want)
	}
}

func TestServerErrorDeletesTheDocumentOnlyWhenItRepeats(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var flaky switchable
	site.html("/", "home", links("/flaky.html"))
	site.handle("/flaky.html", flaky.handler("flaky"))
	cfg, out := testConfig(t, "", "max_age: 1ns", site.URL+"/")
	id := docfields.ID(site.URL + "/flaky.html")

	c, _ := crawlKeep(t, cfg)
	if r := record(t, c, site.URL+"/flaky.html"); !r.Indexed {
		t.Fatal("first cycle did not index the page")
	}

	flaky.set(http.StatusInternalServerError, nil)
	again(t, c)
	r := wantState(t, c, site.URL+"/flaky.html", frontier.Error, "http_500")
	if !r.Indexed || slices.Contains(deletedIDs(t, out), id) {
		t.Errorf("one 500 deleted the document (indexed %v, deletes %v)", r.Indexed, deletedIDs(t, out))
	}

	report := again(t, c)
	r = wantState(t, c, site.URL+"/flaky.html", frontier.Error, "http_500")
	if r.Indexed || r.ErrCount != 2 {
		t.Errorf("after the repeated 500: indexed %v, ErrCount %d; want false and 2", r.Indexed, r.ErrCount)
	}
	if got := deletedIDs(t, out); !slices.Equal(got, []string{id}) {
		t.Errorf("delete actions %v, want one for the page", got)
	}
	if report.Total.Deleted != 1 {
		t.Errorf("third cycle deleted %d, want 1", report.Total.Deleted)
	}
	if n := site.hit("/flaky.html"); n != 3 {
		t.Errorf("page requested %d times, want 3 (once a cycle)", n)
	}
}

func TestServiceUnavailableWithoutRetryAfterIsAPermanentError(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/down.html"))
	site.status("/down.html", http.StatusServiceUnavailable)
	cfg, _ := testConfig(t, "", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	r := wantState(t, c, site.URL+"/down.html", frontier.Error, "http_503")
	if r.Status != http.StatusServiceUnavailable || site.hit("/down.html") != 1 {
		t.Errorf("status %d after %d requests, want 503 after 1", r.Status, site.hit("/down.html"))
	}
	if report.Total.Errors != 1 {
		t.Errorf("report counts %d errors, want 1", report.Total.Errors)
	}
}

func TestTooManyRequestsAndServiceUnavailableWithRetryAfterAreRetriedInTheSameCycle(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/busy.html", "/unavailable.html"))
	for path, status := range map[string]int{"/busy.html": http.StatusTooManyRequests, "/unavailable.html": http.StatusServiceUnavailable} {
		var calls atomic.Int32
		site.handle(path, func(w http.ResponseWriter, r *http.Request) {
			if calls.Add(1) == 1 {
				w.Header().Set("Retry-After", "1")
				w.WriteHeader(status)
				return
			}
			htmlPage(path, "")(w, r)
		})
	}
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/busy.html", "/unavailable.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	for _, p := range []string{"/busy.html", "/unavailable.html"} {
		r := wantState(t, c, site.URL+p, frontier.Fetched, "")
		if r.TempErrCount != 0 || r.Status != http.StatusOK {
			t.Errorf("%s: TempErrCount %d, status %d after the retry", p, r.TempErrCount, r.Status)
		}
		at := site.at(p)
		if len(at) != 2 {
			t.Fatalf("%s requested %d times, want 2", p, len(at))
		}
		if gap := at[1].Sub(at[0]); gap < time.Second {
			t.Errorf("%s retried %v after Retry-After: 1", p, gap)
		}
	}
	if report.Total.Errors != 0 {
		t.Errorf("report counts %d errors for answers that were retried", report.Total.Errors)
	}
}

func TestConnectionRefusedIsTemporaryAndEndsInErrorAfterMaxTemporaryErrors(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", "")
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closed := "http://" + l.Addr().String() + "/"
	l.Close()
	// Without robots.txt: with it, the refused robots.txt request would
	// postpone the page (robots_unavailable) before the page is tried.
	cfg, _ := testConfig(t, "", "max_temporary_errors: 4\nrobots: {obey: false}", site.URL+"/", closed)

	c, report := crawlTimed(t, cfg, provider.Timing{RetryBase: 10 * time.Millisecond})

	r := wantState(t, c, closed, frontier.Error, "connection_refused")
	if r.ErrCount != 1 || r.Indexed {
		t.Errorf("ErrCount %d, indexed %v", r.ErrCount, r.Indexed)
	}
	if ex := exampleFor(report, "connection_refused"); !strings.Contains(ex, "in a row: 4") {
		t.Errorf("report example %q does not say 4 attempts in a row", ex)
	}
	wantState(t, c, site.URL+"/", frontier.Fetched, "")
}

func TestSlowPageBeyondTheTimeoutIsRecordedAsTimeoutAndTheCrawlGoesOn(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	site.html("/", "home", links("/slow-headers.html", "/slow-body.html", "/fast.html"))
	site.handle("/slow-headers.html", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	site.handle("/slow-body.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><title>slow</title><body>")
		w.(http.Flusher).Flush()
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	site.html("/fast.html", "fast", "")
	cfg, out := testConfig(t, "fetch: {timeout: 2s}", "max_temporary_errors: 1", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/slow-headers.html", frontier.Error, "timeout")
	wantState(t, c, site.URL+"/slow-body.html", frontier.Error, "timeout")
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/fast.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
	if got := report.Total.Reasons["timeout"]; got != 2 {
		t.Errorf("report counts %d timeouts, want 2", got)
	}
}

func TestBodyOverMaxBodyBytesIsTooLargeAndNeverIndexed(t *testing.T) {
	t.Parallel()
	const limit = 20000
	site := newSite(t)
	site.html("/", "home", links("/huge.html", "/huge-chunked.html", "/exact.html"))
	filler := func(n int, last string) string {
		head := "<html><head><title>t</title></head><body><p>"
		tail := " " + last + "</p></body></html>"
		pad := n - len(head) - len(tail)
		return head + strings.Repeat("w ", pad/2) + strings.Repeat("w", pad%2) + tail
	}
	exact := filler(limit, "lastword")
	if len(exact) != limit {
		t.Fatalf("exact page is %d bytes", len(exact))
	}
	site.text("/exact.html", "text/html", exact)
	site.text("/huge.html", "text/html", filler(1<<20, "hugeend"))
	site.handle("/huge-chunked.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		for range 64 {
			if _, err := fmt.Fprint(w, strings.Repeat("<p>chunk</p>", 100)); err != nil {
				return
			}
			w.(http.Flusher).Flush()
		}
	})
	cfg, out := testConfig(t, fmt.Sprintf("fetch: {max_body_bytes: %d}", limit), "", site.URL+"/")

	c, report := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/huge.html", frontier.Excluded, "too_large")
	wantState(t, c, site.URL+"/huge-chunked.html", frontier.Excluded, "too_large")
	if got := report.Total.Reasons["too_large"]; got != 2 {
		t.Errorf("report counts %d too_large, want 2", got)
	}
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/exact.html"); !slices.Equal(got, want) {
		t.Fatalf("indexed %v, want %v", got, want)
	}
	for _, a := range readBulk(t, out) {
		if a.doc != nil && a.doc.URL == site.URL+"/exact.html" && !strings.HasSuffix(words(a.doc.Body), "lastword") {
			t.Errorf("a page of exactly max_body_bytes lost its end: %q", a.doc.Body[max(0, len(a.doc.Body)-40):])
		}
	}
}

func TestUnwantedMIMETypeIsRefusedBeforeItsBodyIsDownloaded(t *testing.T) {
	t.Parallel()
	const size = 128 << 20
	site := newSite(t)
	var mu sync.Mutex
	written := map[string]int{}
	serve := func(contentType string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", contentType)
			w.Header().Set("Content-Length", fmt.Sprint(size))
			chunk := make([]byte, 32<<10)
			for n := 0; n < size; n += len(chunk) {
				k, err := w.Write(chunk)
				mu.Lock()
				written[r.URL.Path] += k
				mu.Unlock()
				if err != nil {
					return
				}
			}
		}
	}
	site.html("/", "home", links("/picture", "/report", "/data", "/file.pdf", "/photo.png"))
	site.handle("/picture", serve("image/png"))
	site.handle("/report", serve("application/pdf"))
	site.handle("/data", serve("application/octet-stream"))
	site.handle("/file.pdf", serve("application/pdf"))
	site.handle("/photo.png", serve("image/png"))
	// Body limits above the size, so only the early refusal keeps the
	// client from reading it all; a source that reads HTML only. The
	// octet-stream body's first bytes show nothing it reads.
	cfg, out := testConfig(t, fmt.Sprintf("fetch: {concurrency: 4, max_body_bytes: %d, max_document_bytes: %d}", 2*size, 2*size),
		"mime_types: [text/html]", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/picture", frontier.Excluded, "ignored_extension")
	// pdf is not on the default ignored list, so the type decides.
	wantState(t, c, site.URL+"/report", frontier.Excluded, "mime_type")
	wantState(t, c, site.URL+"/file.pdf", frontier.Excluded, "mime_type")
	wantState(t, c, site.URL+"/data", frontier.Excluded, "mime_type")
	wantState(t, c, site.URL+"/photo.png", frontier.Excluded, "ignored_extension")
	if n := site.hit("/photo.png"); n != 0 {
		t.Errorf("/photo.png requested %d times: its extension decides before any request", n)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, p := range []string{"/picture", "/report", "/data", "/file.pdf"} {
		if site.hit(p) != 1 {
			t.Errorf("%s requested %d times, want 1", p, site.hit(p))
		}
		// What the socket buffers absorbed before the client hung up, not the body.
		if written[p] >= size/4 {
			t.Errorf("%s: the server wrote %d of %d bytes before the client went away", p, written[p], size)
		}
	}
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

func TestAgedCheckSendsTheValidatorsAndANotModifiedKeepsTheDocument(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	const etag, modified = `"v1"`, "Mon, 02 Jan 2006 15:04:05 GMT"
	site.html("/", "home", links("/page.html"))
	site.handle("/page.html", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") == etag {
			w.WriteHeader(http.StatusNotModified)
			return
		}
		w.Header().Set("ETag", etag)
		w.Header().Set("Last-Modified", modified)
		htmlPage("page", "")(w, r)
	})
	cfg, out := testConfig(t, "", "max_age: 1ns", site.URL+"/")

	c, _ := crawlKeep(t, cfg)
	report := again(t, c)

	h := site.headers("/page.html")
	if len(h) != 2 {
		t.Fatalf("page requested %d times, want 2", len(h))
	}
	if h[0].Get("If-None-Match") != "" || h[0].Get("If-Modified-Since") != "" {
		t.Errorf("the first request was conditional: %v", h[0])
	}
	if h[1].Get("If-None-Match") != etag || h[1].Get("If-Modified-Since") != modified {
		t.Errorf("the aged check sent If-None-Match %q, If-Modified-Since %q", h[1].Get("If-None-Match"), h[1].Get("If-Modified-Since"))
	}
	r := wantState(t, c, site.URL+"/page.html", frontier.Fetched, "")
	if r.Status != http.StatusNotModified || !r.Indexed || r.ETag != etag {
		t.Errorf("after the 304: status %d, indexed %v, etag %q", r.Status, r.Indexed, r.ETag)
	}
	if report.Total.Unchanged != 2 || report.Total.Written != 0 {
		t.Errorf("second cycle: %d unchanged, %d written; want 2 and 0", report.Total.Unchanged, report.Total.Written)
	}
	if got := indexedURLs(t, out); !slices.Equal(got, sortedURLs(site.URL, "/", "/page.html")) {
		t.Errorf("index actions over both cycles: %v", got)
	}
}

// The aged check is made without colly (fetch's recheckPage), so
// fetch.timeout reaches it by another way than the first fetch's.
func TestAnAgedCheckBeyondTheTimeoutIsRecordedAsTimeout(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	const etag = `"v1"`
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	site.html("/", "home", links("/slow-headers.html", "/slow-body.html"))
	site.handle("/slow-headers.html", func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("If-None-Match") != "" {
			hang(w, r)
			return
		}
		w.Header().Set("ETag", etag)
		htmlPage("headers", "")(w, r)
	})
	site.handle("/slow-body.html", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("ETag", `"v2"`) // changed: the check's answer is a 200
		if r.Header.Get("If-None-Match") == "" {
			htmlPage("body", "")(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprint(w, "<html><title>slow</title><body>")
		w.(http.Flusher).Flush()
		hang(w, r)
	})
	cfg, _ := testConfig(t, "fetch: {timeout: 2s, response_header_timeout: 1h}", "max_age: 1ns\nmax_temporary_errors: 1", site.URL+"/")

	c, _ := crawlKeep(t, cfg)
	report := again(t, c)

	for _, p := range []string{"/slow-headers.html", "/slow-body.html"} {
		h := site.headers(p)
		if len(h) != 2 || h[1].Get("If-None-Match") == "" {
			t.Fatalf("%s: %d requests, the second conditional: %v; want an aged check", p, len(h), len(h) == 2)
		}
		wantState(t, c, site.URL+p, frontier.Error, "timeout")
	}
	if got := report.Total.Reasons["timeout"]; got != 2 {
		t.Errorf("the second cycle's report counts %d timeouts, want 2", got)
	}
	for _, e := range report.Examples {
		if e.Reason == "timeout" && !strings.Contains(e.Detail, "fetch.timeout (2s) exceeded") {
			t.Errorf("%s: the report's cause %q does not name the limit", e.URL, e.Detail)
		}
	}
}

func TestNotModifiedToAnUnconditionalRequestIsAPermanentError(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	site.html("/", "home", links("/odd.html"))
	site.status("/odd.html", http.StatusNotModified)
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/odd.html", frontier.Error, "http_304_unconditional")
	if got := indexedURLs(t, out); !slices.Equal(got, sortedURLs(site.URL, "/")) {
		t.Errorf("indexed %v", got)
	}
}

func TestTemporaryErrorsDeleteTheDocumentAfterMaxTemporaryErrors(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	var page switchable
	site.html("/", "home", links("/page.html"))
	site.handle("/page.html", page.handler("page"))
	cfg, out := testConfig(t, "", "max_age: 1ns\nmax_temporary_errors: 3", site.URL+"/")

	c, _ := crawlKeep(t, cfg)
	page.set(http.StatusServiceUnavailable, http.Header{"Retry-After": {"0"}})
	report := again(t, c)

	r := wantState(t, c, site.URL+"/page.html", frontier.Error, "http_503")
	if r.Indexed {
		t.Error("the document outlived max_temporary_errors")
	}
	if n := site.hit("/page.html"); n != 4 {
		t.Errorf("page requested %d times, want 4 (one success, three temporary errors)", n)
	}
	if got := deletedIDs(t, out); !slices.Equal(got, []string{docfields.ID(site.URL + "/page.html")}) {
		t.Errorf("delete actions %v", got)
	}
	if report.Total.Deleted != 1 || report.Total.Errors != 1 {
		t.Errorf("second cycle: %d deleted, %d errors; want 1 and 1", report.Total.Deleted, report.Total.Errors)
	}
}

func TestResponseHeaderTimeoutEndsAPageWhoseHeadersNeverCome(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	site.html("/", "home", links("/silent.html", "/fast.html"))
	site.handle("/silent.html", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-release:
		}
	})
	site.html("/fast.html", "fast", "")
	cfg, out := testConfig(t, "fetch: {response_header_timeout: 200ms, timeout: 1h}", "max_temporary_errors: 1", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/silent.html", frontier.Error, "timeout")
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/fast.html"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}

func TestResponseWithoutContentTypeIsJudgedByItsSniffedType(t *testing.T) {
	t.Parallel()
	site := newSite(t)
	png := append([]byte("\x89PNG\r\n\x1a\n"), make([]byte, 2048)...)
	site.html("/", "home", links("/blob", "/untyped-page"))
	site.handle("/blob", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil // no header at all, not net/http's guess
		w.Write(png)
	})
	site.handle("/untyped-page", func(w http.ResponseWriter, r *http.Request) {
		w.Header()["Content-Type"] = nil
		fmt.Fprint(w, "<!DOCTYPE html><html><head><title>untyped</title></head><body><p>text</p></body></html>")
	})
	cfg, out := testConfig(t, "", "", site.URL+"/")

	c, _ := crawlKeep(t, cfg)

	wantState(t, c, site.URL+"/blob", frontier.Excluded, "ignored_extension")
	if got, want := indexedURLs(t, out), sortedURLs(site.URL, "/", "/untyped-page"); !slices.Equal(got, want) {
		t.Errorf("indexed %v, want %v", got, want)
	}
}
