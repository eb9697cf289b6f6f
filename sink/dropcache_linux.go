package sink

import (
	"os"

	"golang.org/x/sys/unix"
)

// dropCache tells the kernel the file's bytes in [from, to) are not to be
// read again: they are on disk (synced) and the sink only appends. Left in
// the page cache, the documents of a large crawl (24 KB a page, 24 GB for
// a million pages) push out what is read again and again, the frontier's
// store above all, and cost the crawler the kernel's reclaim of them.
func dropCache(f *os.File, from, to int64) {
	if to > from {
		_ = unix.Fadvise(int(f.Fd()), from, to-from, unix.FADV_DONTNEED)
	}
}
