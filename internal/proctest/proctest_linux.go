//go:build linux

package proctest

import (
	"errors"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Ended waits until process pid has ended (a zombie, or reaped) and says
// true, or false if it still runs shortly before go test's -timeout.
func Ended(t *testing.T, pid int) bool {
	t.Helper()
	fd, err := unix.PidfdOpen(pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true // reaped already
	}
	if err != nil {
		t.Fatalf("pidfd_open %d: %v", pid, err)
	}
	defer unix.Close(fd)
	for {
		wait := -1 // no -timeout: for ever
		if d, ok := t.Deadline(); ok {
			wait = max(0, int(time.Until(d.Add(-margin*time.Second)).Milliseconds()))
		}
		n, err := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, wait)
		switch {
		case errors.Is(err, unix.EINTR):
		case err != nil:
			t.Fatalf("poll on the pidfd of %d: %v", pid, err)
		default:
			return n > 0
		}
	}
}
