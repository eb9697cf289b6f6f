// Package pdftest readies PDFium for tests whose processes read PDFs through the crawler's
// reader: it compiles PDFium once into the crawler's cache before the tests run.
package pdftest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"syscall"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/document/pdf"
)

// Warm compiles PDFium into pdf.DefaultCacheDir, where the crawler's PDF reader and its workers
// find it, by reading a small PDF with the test binary as the worker (its TestMain must have
// called pdf.Worker). On a machine whose cache is empty every worker started before that
// compiled PDFium again, which under the race detector and a loaded machine took longer than the
// tests' documents.timeout: their PDFs failed as extract_timeout. Test binaries that warm at the
// same moment take turns on a lock file in the cache, so the second finds what the first
// compiled. It does nothing where there is no cache directory; a failure is the tests' to find.
func Warm() {
	dir := pdf.DefaultCacheDir()
	if dir == "" || os.MkdirAll(dir, 0o755) != nil {
		return
	}
	_, here, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(here), "..", "..", "document", "pdf", "testdata", "cnfsat.pdf"))
	if err != nil {
		return
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".warm.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return
	}
	r := pdf.NewReader(pdf.Config{CacheDir: dir, Instances: 1})
	_, _ = r.Read(context.Background(), data, document.Limits{})
	r.Close()
}
