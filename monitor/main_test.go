package monitor_test

import (
	"os"
	"testing"

	"github.com/crawlspace/crawlspace/document/pdf"
)

// TestMain lets the test binary serve as the PDF reader's worker process.
func TestMain(m *testing.M) {
	pdf.Worker()
	os.Exit(m.Run())
}
