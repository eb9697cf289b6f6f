package provider

import (
	"fmt"
	"runtime"
	"sync/atomic"
	"testing"
)

// A page holds its group's lock until its outcome is stored. With locks
// striped over 64 mutexes, 65 pages of different content awaiting their
// commits could not all hold theirs: some waited for an unrelated page's
// commit. Here one goroutine holds a thousand groups at once.
func TestGroupLocksHoldAThousandGroupsAtOnceAndTheSameGroupWaits(t *testing.T) {
	var g groupLocks
	unlocks := make([]func(), 0, 1000)
	for i := range 1000 {
		unlocks = append(unlocks, g.lock(groupName{"src", fmt.Sprintf("content-%d", i)}))
	}
	if n := len(g.held); n != 1000 {
		t.Fatalf("%d groups held, want 1000", n)
	}
	// Another member of the first group waits until the first lets go.
	var got atomic.Bool
	done := make(chan func())
	go func() {
		u := g.lock(groupName{"src", "content-0"})
		got.Store(true)
		done <- u
	}()
	for {
		g.mu.Lock()
		users := g.held[groupName{"src", "content-0"}].users
		g.mu.Unlock()
		if users == 2 {
			break
		}
		runtime.Gosched()
	}
	if got.Load() {
		t.Fatal("a second member took the lock its group's first member holds")
	}
	// The same content in another source is another group.
	g.lock(groupName{"other", "content-0"})()
	unlocks[0]()
	(<-done)()
	for _, u := range unlocks[1:] {
		u()
	}
	if n := len(g.held); n != 0 {
		t.Errorf("%d groups still held once every member let go, want none", n)
	}
}
