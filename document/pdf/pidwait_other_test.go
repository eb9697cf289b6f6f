//go:build !linux

package pdf

import "testing"

// awaitEnd needs Linux's pidfd.
func awaitEnd(t *testing.T, _ int) {
	t.Helper()
	t.Skip("waiting for a process that is not a child needs Linux's pidfd")
}
