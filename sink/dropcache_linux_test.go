package sink_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/crawlspace/crawlspace/sink"
)

// residentPages counts the pages of path in the page cache (mincore).
func residentPages(t *testing.T, path string) (resident, total int) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	st, _ := f.Stat()
	data, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Munmap(data)
	vec := make([]byte, (len(data)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, errno := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&data[0])), uintptr(len(data)), uintptr(unsafe.Pointer(&vec[0]))); errno != 0 {
		t.Fatal(errno)
	}
	for _, v := range vec {
		if v&1 != 0 {
			resident++
		}
	}
	return resident, len(vec)
}

func TestFileSinkLetsSyncedDocumentsGoFromThePageCache(t *testing.T) {
	dir := t.TempDir()
	var fs unix.Statfs_t
	if err := unix.Statfs(dir, &fs); err != nil || fs.Type == unix.TMPFS_MAGIC {
		t.Skipf("%s is on tmpfs (%v): its pages are the file itself and cannot be dropped", dir, err)
	}
	path := filepath.Join(dir, "docs.ndjson")
	// A file from an earlier crawl: appended to, not this sink's to drop.
	before := strings.Repeat("x", 64<<10) + "\n"
	if err := os.WriteFile(path, []byte(before), 0o644); err != nil {
		t.Fatal(err)
	}
	var got results
	s, err := sink.NewFileEvery(path, "web", got.add, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i := range 200 {
		if err := s.Index(ctx, doc(fmt.Sprintf("http://example.test/%d", i), strings.Repeat("body ", 2000))); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	resident, total := residentPages(t, path)
	// The earlier crawl's 16 pages may stay cached; this sink's ~500 are
	// synced and must be let go (the last, partly written page may stay).
	if total < 200 || resident > 16+1 {
		t.Errorf("%d of the file's %d pages are still cached after the sync, want at most the earlier file's 16 and one more", resident, total)
	}
	if n := len(got.outcomes()); n != 200 {
		t.Errorf("%d writes acknowledged, want 200", n)
	}
	if err := s.Close(ctx); err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(path)
	if !strings.HasPrefix(string(raw), before) || strings.Count(string(raw), "\n") != 1+400 {
		t.Errorf("the file lost what it held or its lines: %d lines", strings.Count(string(raw), "\n"))
	}
}
