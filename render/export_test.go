package render

// SetMaxMemory changes the browser's memory bound, as if it had been
// started with it: a test sets it from what the running browser holds.
func SetMaxMemory(b *Browser, n int64) { b.maxMemory.Store(n) }
