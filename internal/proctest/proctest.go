// Package proctest waits, for tests, for the end of a process that is
// not the test's child (a worker or browser reparented when its parent
// died), without polling on a period: the kernel tells a pidfd's poller.
package proctest

// margin is how long before go test's -timeout Ended gives up, so that
// the test fails saying what it waited for rather than in the timeout's
// panic.
const margin = 30 // seconds
