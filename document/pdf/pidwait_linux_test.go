package pdf

import (
	"errors"
	"testing"

	"golang.org/x/sys/unix"
)

// awaitEnd waits until process pid has ended (a zombie or reaped): the
// kernel tells a pidfd's poller, so nothing is polled on a period.
func awaitEnd(t *testing.T, pid int) {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return // reaped already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		_, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, -1)
		if err == nil {
			return
		}
		if !errors.Is(err, unix.EINTR) {
			t.Fatalf("poll on pidfd of %d: %v", pid, err)
		}
	}
}
