package control

import "time"

// SetRetry shortens the waits between a notification's attempts, for a
// test's own notifier.
func SetRetry(n *Notifier, first, most time.Duration) {
	for _, t := range n.targets {
		t.timing = timing{first: first, most: most}
	}
}
