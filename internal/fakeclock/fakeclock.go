// Package fakeclock is the settable time source tests inject where code
// takes a func() time.Time, so they move time instead of sleeping. It
// stands apart from crawltest because frontier's and robots' own tests use
// it, and crawltest imports both through provider.
package fakeclock

import (
	"sync"
	"time"
)

// Clock is a time source that moves only when the test moves it; it is
// safe for the goroutines of the code under test.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// New starts a clock at t.
func New(t time.Time) *Clock { return &Clock{t: t} }

// Now is the clock's time; pass the method value where code asks for a
// func() time.Time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// Advance moves the clock on by d.
func (c *Clock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}
