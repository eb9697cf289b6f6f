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
