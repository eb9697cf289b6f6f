package pdf

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/crawlspace/crawlspace/internal/pdftest"
)

// testCache is where the tests' readers keep PDFium's compiled code, one directory for every run.
var testCache = filepath.Join(os.TempDir(), "crawlspace-pdfium-test-cache")

// TestMain lets the test binary serve as the Reader's worker process, and compiles PDFium into
// testCache before any test reads a PDF (pdftest.Warm says why).
func TestMain(m *testing.M) {
	Worker()
	pdftest.Warm(testCache)
	os.Exit(m.Run())
}
