package esfrontier

// Die stops the store as a killed process stops: no outcome stored, no
// partition given back, no heartbeat any more.
func (s *Store) Die() {
	s.closeOnce.Do(func() {
		s.sched.close()
		s.stop()
		s.wg.Wait()
	})
}

// Partition is the partition hostKey falls in.
func (s *Store) Partition(hostKey string) int { return s.partition(hostKey) }

// OnHoldBack has f called, under the scheduler's lock, each time a page
// limit holds URLs back.
func (s *Store) OnHoldBack(f func()) {
	s.sched.mu.Lock()
	s.sched.onHoldBack = f
	s.sched.mu.Unlock()
}
