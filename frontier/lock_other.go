//go:build !unix

package frontier

import (
	"os"
	"time"
)

// lockFile does nothing where bbolt locks otherwise: the check before the
// open runs unlocked there.
func lockFile(*os.File, bool, time.Duration) error { return nil }
