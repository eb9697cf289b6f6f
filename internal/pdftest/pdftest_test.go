package pdftest_test

import (
	"context"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/internal/pdftest"
)

func TestMain(m *testing.M) {
	pdf.Worker()
	os.Exit(m.Run())
}

// What the helper compiled is what this binary's workers read: they add nothing to the cache. A
// wazero that keyed its cache on something the helper does not share (its version as read from
// a test binary, say) would make every worker compile PDFium again, under the race detector.
func TestWarmCompilesWhatTheCallersWorkersRead(t *testing.T) {
	dir := t.TempDir()
	pdftest.Warm(dir)
	before := files(t, dir)
	if len(before) == 0 {
		t.Fatal("Warm left no compiled code in the cache")
	}
	data, err := os.ReadFile(filepath.Join("..", "..", "document", "pdf", "testdata", "cnfsat.pdf"))
	if err != nil {
		t.Fatal(err)
	}
	r := pdf.NewReader(pdf.Config{CacheDir: dir, Instances: 1})
	defer r.Close()
	c, err := r.Read(context.Background(), data, document.Limits{})
	if err != nil || c.Pages != 6 {
		t.Fatalf("read after Warm: %v", err)
	}
	if after := files(t, dir); !maps.EqualFunc(before, after, time.Time.Equal) {
		t.Errorf("the worker wrote to the cache Warm had filled: before %v, after %v", before, after)
	}
}

// files lists the compiled code under dir with its modification times.
func files(t *testing.T, dir string) map[string]time.Time {
	t.Helper()
	out := map[string]time.Time{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasPrefix(d.Name(), ".") {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		out[strings.TrimPrefix(p, dir)] = info.ModTime()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
