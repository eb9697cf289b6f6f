//go:build unix

package frontier

import (
	"errors"
	"os"
	"syscall"
	"time"

	berrors "go.etcd.io/bbolt/errors"
)

// lockFile takes the advisory lock bbolt uses (flock), waiting up to
// timeout (0: for ever) as bbolt does; berrors.ErrTimeout when it is held.
// The wait is on the real clock, not the crawler's: the lock is another
// process's, which a clock of this one cannot hurry.
func lockFile(file *os.File, exclusive bool, timeout time.Duration) error {
	how := syscall.LOCK_SH | syscall.LOCK_NB
	if exclusive {
		how = syscall.LOCK_EX | syscall.LOCK_NB
	}
	start := time.Now()
	for {
		err := syscall.Flock(int(file.Fd()), how)
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			return err
		}
		if timeout > 0 && time.Since(start) > timeout {
			return berrors.ErrTimeout
		}
		time.Sleep(50 * time.Millisecond)
	}
}
