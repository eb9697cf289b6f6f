package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"

	"github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/internal/pdftest"
	"github.com/crawlspace/crawlspace/internal/tmpfs"
)

// commandEnv carries, as a JSON list, the arguments of a crawlspace command
// the test binary runs as its main (see runCommand).
const commandEnv = "CRAWLSPACE_TEST_COMMAND"

func TestMain(m *testing.M) {
	pdf.Worker()
	if env, ok := os.LookupEnv(commandEnv); ok {
		var args []string
		if err := json.Unmarshal([]byte(env), &args); err != nil {
			fmt.Fprintln(os.Stderr, err)
			os.Exit(3)
		}
		tuneGC()
		os.Exit(dispatch(args))
	}
	// The commands these tests run read PDFs in workers that are this binary too.
	pdftest.Warm(pdf.DefaultCacheDir())
	os.Exit(m.Run())
}

// result is what a crawlspace command did in its own process.
type result struct {
	code           int
	stdout, stderr string
}

// runCommand runs crawlspace with args in a child process, as the binary
// would: its exit code is the command's own, and a panic is exit 2 with
// the trace on stderr instead of the end of the test.
func runCommand(t *testing.T, args ...string) result {
	t.Helper()
	return runCommandUntil(t, t.Context(), args...)
}

// runCommandUntil is runCommand killing the command when ctx ends, or
// after a few minutes: a command that should have exited does not hang
// the test (`run` over a store it should refuse would serve for ever).
func runCommandUntil(t *testing.T, ctx context.Context, args ...string) result {
	t.Helper()
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	env, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), commandEnv+"="+string(env))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, exited := err.(*exec.ExitError); err != nil && !exited {
		t.Fatalf("crawlspace %s: %v", strings.Join(args, " "), err)
	}
	return result{cmd.ProcessState.ExitCode(), stdout.String(), stderr.String()}
}

func (r result) String() string {
	return fmt.Sprintf("exit %d, stdout %q, stderr %q", r.code, short(r.stdout), short(r.stderr))
}

func short(s string) string {
	if len(s) > 2000 {
		return s[:2000] + "…"
	}
	return s
}

// crawledStore crawls the ops site into a new state store and returns the
// config file and the store file.
func crawledStore(t *testing.T) (config, store string) {
	t.Helper()
	site := opsSite(t, nil)
	cfg, set, path := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
sources:
  - name: docs
    start_urls: [%q]
`, filepath.Join(t.TempDir(), "docs.ndjson"), site.URL+"/"))
	if code := crawlOnce(context.Background(), cfg, set, jsonOutput(io.Discard, io.Discard), ""); code != exitOK {
		t.Fatalf("crawl exit %d", code)
	}
	return path, filepath.Join(cfg.StateDir, "frontier.db")
}

// pageLayout reads the page size, the pages in use and a page of the URL
// tree from a closed store file.
func pageLayout(t *testing.T, store string) (pageSize, pages int64, dataPage uint64) {
	t.Helper()
	db, err := bolt.Open(store, 0o600, &bolt.Options{ReadOnly: true, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	err = db.View(func(tx *bolt.Tx) error {
		pageSize = int64(db.Info().PageSize)
		pages = tx.Size() / pageSize
		for _, b := range []string{"r", "x", "q"} { // records, URL index, queue
			if bk := tx.Bucket([]byte(b)); bk != nil && bk.Root() != 0 {
				dataPage = uint64(bk.Root())
				return nil
			}
		}
		return fmt.Errorf("every bucket is inline")
	})
	if err != nil {
		t.Fatal(err)
	}
	return pageSize, pages, dataPage
}

// moveStateDir points the config file at another state directory.
func moveStateDir(t *testing.T, config, dir string) {
	t.Helper()
	b, err := os.ReadFile(config)
	if err != nil {
		t.Fatal(err)
	}
	b = regexp.MustCompile(`(?m)^state_dir: .*$`).ReplaceAll(b, []byte("state_dir: "+dir))
	if err := os.WriteFile(config, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func writeAt(t *testing.T, path string, off int64, b []byte) {
	t.Helper()
	fh, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer fh.Close()
	if _, err := fh.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

func randomPage(n int64) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rand.Uint32())
	}
	return b
}

// storeCommands are the commands that open the state store.
var storeCommands = [][]string{{"crawl", "-quiet"}, {"run", "-quiet"}, {"status"}, {"status", "-json"}, {"reindex", "-quiet"}, {"clear-errors"},
	{"confirm-deletes", "-source", "docs"}}

func TestEveryCommandRefusesADamagedStoreWithExitOneAndNoPanic(t *testing.T) {
	config, store := crawledStore(t)
	good, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	ps, pages, data := pageLayout(t, store)
	stateDir := filepath.Dir(store)
	for _, c := range []struct {
		name   string
		damage func()
	}{
		{"emptied to zero bytes", func() { os.Truncate(store, 0) }},
		{"truncated to half its pages", func() { os.Truncate(store, pages*ps/2) }},
		{"random bytes over a data page", func() { writeAt(t, store, int64(data)*ps, randomPage(ps)) }},
		{"garbage over both meta pages", func() { writeAt(t, store, 0, randomPage(2*ps)) }},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, args := range storeCommands {
				if err := os.WriteFile(store, good, 0o600); err != nil {
					t.Fatal(err)
				}
				c.damage()
				damaged, _ := os.ReadFile(store)
				r := runCommand(t, append(args, "-config", config)...)
				if r.code != exitFailed || !strings.Contains(r.stderr, "state store "+stateDir+" is corrupt: restore it or remove it to start over") {
					t.Errorf("crawlspace %s over a store %s: %s; want exit 1 saying the state store is corrupt", args[0], c.name, r)
				}
				if strings.Contains(r.stderr, "panic") || strings.Contains(r.stderr, "goroutine ") {
					t.Errorf("crawlspace %s panicked:\n%s", args[0], short(r.stderr))
				}
				if now, _ := os.ReadFile(store); !bytes.Equal(now, damaged) {
					t.Errorf("crawlspace %s changed the damaged store (%d bytes, were %d): it must be left for a restore", args[0], len(now), len(damaged))
				}
			}
		})
	}
}

func TestOneGarbageMetaPageLeavesEveryCommandWorking(t *testing.T) {
	config, store := crawledStore(t)
	ps, _, _ := pageLayout(t, store)
	// What a crash while writing a meta page leaves: bbolt falls back to
	// the other one, the store as of one transaction before.
	writeAt(t, store, 0, randomPage(ps))
	if r := runCommand(t, "status", "-config", config); r.code != exitOK || !strings.Contains(r.stdout, "docs: ") {
		t.Errorf("status with one garbage meta page: %s; want the store's counts", r)
	}
	for _, args := range storeCommands {
		if args[0] == "run" {
			continue // it runs until stopped
		}
		if r := runCommand(t, append(args, "-config", config)...); r.code != exitOK {
			t.Errorf("crawlspace %s with one garbage meta page: %s; want exit 0", args[0], r)
		}
	}
}

func TestStatusReadsAStoreOnAReadOnlyFileSystemAndTheOthersSayItCannotBeWritten(t *testing.T) {
	config, store := crawledStore(t)
	good, err := os.ReadFile(store)
	if err != nil {
		t.Fatal(err)
	}
	ro := tmpfs.Mount(t, 64<<20)
	if err := os.WriteFile(filepath.Join(ro, "frontier.db"), good, 0o600); err != nil {
		t.Fatal(err)
	}
	moveStateDir(t, config, ro)
	tmpfs.ReadOnly(t, ro)
	if r := runCommand(t, "status", "-config", config); r.code != exitOK || !strings.Contains(r.stdout, "docs: ") || strings.Contains(r.stderr, "running crawl") {
		t.Errorf("status of a store on a read-only file system: %s; want its counts", r)
	}
	for _, args := range [][]string{{"crawl", "-quiet"}, {"clear-errors"}, {"confirm-deletes", "-source", "docs"}} {
		r := runCommand(t, append(args, "-config", config)...)
		if r.code != exitFailed || !strings.Contains(r.stderr, "state store "+ro+" cannot be written") || !strings.Contains(r.stderr, "read-only file system") {
			t.Errorf("crawlspace %s on a read-only store: %s; want exit 1 saying it cannot be written and why", args[0], r)
		}
	}
}

// countingSite serves n pages in sections of 100 and counts requests per URL.
type countingSite struct {
	*httptest.Server
	mu        sync.Mutex
	hits      map[string]int
	onRefetch func() // called on each request for a URL served before
}

func newCountingSite(t *testing.T, n int, onRefetch func()) *countingSite {
	s := &countingSite{hits: map[string]int{}, onRefetch: onRefetch}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		again := s.hits[r.URL.Path] > 1
		s.mu.Unlock()
		if again && s.onRefetch != nil {
			s.onRefetch()
		}
		var body strings.Builder
		var sec, page int
		switch {
		case r.URL.Path == "/":
			for i := 0; i*100 < n; i++ {
				fmt.Fprintf(&body, `<a href="/s/%d">s</a> `, i)
			}
		case scan(r.URL.Path, "/s/%d", &sec):
			for p := sec * 100; p < min(n, (sec+1)*100); p++ {
				fmt.Fprintf(&body, `<a href="/p/%d">p</a> `, p)
			}
		case scan(r.URL.Path, "/p/%d", &page):
			body.WriteString("<p>A page of the site, with a few words in it.</p>")
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, "<html><head><title>%s</title></head><body>%s</body></html>", r.URL.Path, body.String())
	}))
	t.Cleanup(s.Close)
	return s
}

func scan(s, format string, v *int) bool {
	_, err := fmt.Sscanf(s, format, v)
	return err == nil
}

// refetched lists the URLs requested more than once, and counts requests.
func (s *countingSite) refetched() (twice []string, total int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for u, n := range s.hits {
		total += n
		if n > 1 {
			twice = append(twice, u)
		}
	}
	return twice, total
}

func TestCrawlAndRunStopOnAFullStateStoreWithExitOneAndFetchNothingTwice(t *testing.T) {
	const pages = 3000
	for _, args := range [][]string{{"crawl", "-quiet"}, {"run", "-quiet"}} {
		t.Run(args[0], func(t *testing.T) {
			state := tmpfs.Mount(t, 2<<20)
			// A refetch storm is stopped at its first refetch rather than left to run.
			ctx, stop := context.WithCancel(t.Context())
			defer stop()
			site := newCountingSite(t, pages, stop)
			_, _, config := writeConfig(t, fmt.Sprintf(`
output: {file: %s}
allow_private_networks: true
fetch: {concurrency: 8}
sources:
  - name: docs
    start_urls: [%q]
    politeness: {max_parallel_per_host: 8}
`, filepath.Join(t.TempDir(), "docs.ndjson"), site.URL+"/"))
			moveStateDir(t, config, state)
			r := runCommandUntil(t, ctx, append(args, "-config", config)...)
			twice, total := site.refetched()
			if len(twice) > 0 {
				t.Errorf("fetched more than once: %v", twice)
			}
			if r.code != exitFailed || !strings.Contains(r.stderr, "state store "+state+" cannot record changes") ||
				!strings.Contains(r.stderr, "no space left on device") {
				t.Errorf("crawlspace %s into a full state store: %s; want exit 1 naming the state store and ENOSPC", args[0], r)
			}
			if total == 0 || total >= pages {
				t.Errorf("the site served %d requests: want the crawl stopped part way through its %d pages", total, pages)
			}
		})
	}
}
