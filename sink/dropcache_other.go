//go:build !linux

package sink

import "os"

// dropCache is Linux's posix_fadvise(DONTNEED); elsewhere the cache is left
// to the kernel.
func dropCache(*os.File, int64, int64) {}
