package provider_test

import (
	"context"
	"os"
	"testing"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/document/pdf"
	"github.com/crawlspace/crawlspace/provider"
)

// TestMain lets the test binary serve as the PDF reader's worker process, and compiles PDFium into
// the crawler's cache before any test reads a PDF: on a machine whose cache is empty every worker
// started meanwhile compiled it again, which under the race detector took longer than the tests'
// documents.timeout (their PDFs failed as extract_timeout on a fresh machine).
func TestMain(m *testing.M) {
	pdf.Worker()
	if dir := provider.PDFCacheDir(); dir != "" {
		if data, err := os.ReadFile("../document/pdf/testdata/cnfsat.pdf"); err == nil {
			r := pdf.NewReader(pdf.Config{CacheDir: dir, Instances: 1})
			_, _ = r.Read(context.Background(), data, document.Limits{})
			r.Close()
		}
	}
	os.Exit(m.Run())
}
