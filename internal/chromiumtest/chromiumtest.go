// Package chromiumtest finds the Chromium the rendering tests drive:
// Debian's chromium package, which scripts/test installs.
package chromiumtest

import (
	"os"
	"os/exec"
	"testing"
)

// Path is the chromium executable. Without one the test skips, saying how
// to get it; under CI (CI set to anything but false or 0) it fails. Under
// go test -short it skips: the inner loop starts no browser.
func Path(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: the tests that start Chromium are left out")
	}
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if ci := os.Getenv("CI"); ci != "" && ci != "false" && ci != "0" {
		t.Fatal("chromium is not installed (scripts/test installs Debian's chromium package)")
	}
	t.Skip("chromium is not installed: apt-get install chromium, or run scripts/test")
	return ""
}
