package provider_test

import (
	"os"
	"testing"

	"github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/internal/pdftest"
)

// TestMain lets the test binary serve as the PDF reader's worker process, and compiles PDFium into
// the crawler's cache before any test reads a PDF (pdftest.Warm says why).
func TestMain(m *testing.M) {
	pdf.Worker()
	pdftest.Warm(pdf.DefaultCacheDir())
	os.Exit(m.Run())
}
