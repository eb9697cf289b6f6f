//go:build !linux

package tmpfs

import "testing"

// Mount skips the test: tmpfs is Linux's.
func Mount(t testing.TB, size int64) string {
	t.Skip("tmpfs is Linux's: this test of a real full or read-only file system runs there")
	return ""
}

// ReadOnly is never reached: Mount skipped the test.
func ReadOnly(t testing.TB, dir string) {}
