package pdf

import (
	"os"
	"testing"
)

// TestMain lets the test binary serve as the Reader's worker process.
func TestMain(m *testing.M) {
	Worker()
	os.Exit(m.Run())
}
