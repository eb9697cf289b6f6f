//go:build linux

// Package tmpfs mounts small tmpfs file systems for tests of a full or
// read-only disk: real file systems, failing as a real one does.
package tmpfs

import (
	"fmt"
	"syscall"
	"testing"
)

// Mount mounts a tmpfs of size bytes on a new directory and unmounts it
// when the test ends. Mounting needs root (or CAP_SYS_ADMIN), as in CI and
// on the project's machines; without it the test is skipped, saying why.
func Mount(t testing.TB, size int64) string {
	t.Helper()
	dir := t.TempDir()
	if err := syscall.Mount("tmpfs", dir, "tmpfs", 0, fmt.Sprintf("size=%d,mode=0755", size)); err != nil {
		t.Skipf("cannot mount a tmpfs on %s (%v): this test of a real full or read-only file system needs root or CAP_SYS_ADMIN", dir, err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(dir, 0); err != nil {
			t.Errorf("unmount %s: %v", dir, err)
		}
	})
	return dir
}

// ReadOnly remounts the tmpfs Mount gave read-only.
func ReadOnly(t testing.TB, dir string) {
	t.Helper()
	if err := syscall.Mount("", dir, "", syscall.MS_REMOUNT|syscall.MS_RDONLY, ""); err != nil {
		t.Fatalf("remount %s read-only: %v", dir, err)
	}
}
