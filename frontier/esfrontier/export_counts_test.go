package esfrontier

import "context"

// Refresh makes every write to the URL index so far searchable.
func (s *Store) Refresh() error { return s.refresh(context.Background()) }
