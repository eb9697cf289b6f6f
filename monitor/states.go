package monitor

import (
	"sync"
	"time"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/frontier"
)

// States counts the state store's URLs by source, state and reason, and
// those due for an aged check. A count walks every record, so it runs in
// the background, at most once every MinInterval (a second) and never more often than
// every 20 times its own duration: however large the store, counting costs
// at most a twentieth of a core.
type States struct {
	front frontier.Scanner
	// maxAge is each source's max_age (0: no aged checks).
	maxAge map[string]time.Duration
	// MinInterval is the shortest time between two counts.
	MinInterval time.Duration
	// Now is the crawler's clock, which dates and times the counts;
	// NewStates sets time.Now. Set it, like MinInterval, before first use.
	Now func() time.Time

	mu      sync.Mutex
	snap    *Snapshot
	running bool
	again   bool // Kick asked for another count while one ran
	err     error
}

// Snapshot is one count of the state store.
type Snapshot struct {
	At      time.Time
	Took    time.Duration
	Sources map[string]*SourceState
}

// SourceState is one source's URLs in the state store.
type SourceState struct {
	frontier.SourceCounts
	// AgedCheckDue counts Fetched or Error URLs last checked longer than
	// max_age ago, and Fetched ones whose sitemap lastmod is newer than
	// their fetch: the URLs the next cycle revisits.
	AgedCheckDue int
	// AgedChecksQueued counts the URLs queued for an aged check in the
	// current cycle and not checked yet, whose records read Fetched or
	// Error until then (see frontier.RequeueDue).
	AgedChecksQueued int
}

// Waiting is the number of URLs queued (leased ones and aged checks
// included).
func (s *SourceState) Waiting() int {
	if s == nil {
		return 0
	}
	return s.States[frontier.Waiting] + s.States[frontier.InFlight] + s.AgedChecksQueued
}

// agedChecks is a store that queues aged checks without a change to their
// records (the bbolt one); it gives the cut each source's were queued by.
type agedChecks interface {
	AgedChecksQueued() (map[string]time.Time, error)
}

// StoreView is one source's URLs in the state store as JSON, with the
// same keys in `crawlspace status -json` and in /status.json.
type StoreView struct {
	Total int `json:"total"`
	// States counts URLs by state; states without URLs are left out, and
	// so are leased ones, which Queued counts with the waiting.
	States map[string]int `json:"store"`
	// Reasons counts the Error and Excluded URLs: state, then reason.
	Reasons      map[string]map[string]int `json:"store_reasons"`
	Queued       int                       `json:"queued"`
	AgedCheckDue int                       `json:"aged_check_due"`
}

// View gives the source's counts as StoreView; a nil s (a source the
// store holds nothing of) gives zero counts.
func (s *SourceState) View() StoreView {
	v := StoreView{States: map[string]int{}, Reasons: map[string]map[string]int{}}
	if s == nil {
		return v
	}
	v.Total, v.Queued, v.AgedCheckDue = s.Total(), s.Waiting(), s.AgedCheckDue
	for i, n := range s.States {
		if n > 0 && frontier.State(i) != frontier.InFlight {
			v.States[frontier.State(i).String()] = n
		}
	}
	for state, m := range s.Reasons {
		v.Reasons[state.String()] = m
	}
	return v
}

// NewStates counts front's URLs for the sources of cfg.
func NewStates(front frontier.Scanner, cfg *config.Config) *States {
	s := &States{front: front, maxAge: map[string]time.Duration{}, MinInterval: time.Second, Now: time.Now}
	for i := range cfg.Sources {
		s.maxAge[cfg.Sources[i].Name] = cfg.Sources[i].MaxAge.D()
	}
	return s
}

// Get returns the last count, nil before the first, and starts a new
// count in the background when it is stale.
func (s *States) Get() *Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stale() {
		s.startLocked()
	}
	return s.snap
}

// Kick starts a count in the background now, or right after the one
// running: after a cycle, say, when the counts have just changed a lot.
func (s *States) Kick() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.running {
		s.again = true
		return
	}
	s.startLocked()
}

func (s *States) startLocked() {
	if s.running {
		return
	}
	s.running = true
	go func() {
		for {
			snap, err := s.count()
			s.mu.Lock()
			if err == nil && (s.snap == nil || snap.At.After(s.snap.At)) {
				s.snap = snap
			}
			s.err = err
			if !s.again || err != nil {
				s.running, s.again = false, false
				s.mu.Unlock()
				return
			}
			s.again = false
			s.mu.Unlock()
		}
	}()
}

// Refresh counts now, waiting for the count, and returns it.
func (s *States) Refresh() (*Snapshot, error) {
	snap, err := s.count()
	s.mu.Lock()
	defer s.mu.Unlock()
	if err != nil {
		s.err = err
		return s.snap, err
	}
	if s.snap == nil || snap.At.After(s.snap.At) {
		s.snap = snap
	}
	return snap, nil
}

// Err is the last count's error.
func (s *States) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

func (s *States) stale() bool {
	if s.snap == nil {
		return true
	}
	wait := max(s.MinInterval, 20*s.snap.Took)
	return s.Now().Sub(s.snap.At) >= wait
}

// counter is a store that counts by source and state itself, in one
// query (the state shared in Elasticsearch: an aggregation), instead of
// being walked a page at a time; agedBefore and due are the aged checks'
// cuts and counts.
type counter interface {
	CountBySource(agedBefore map[string]time.Time) (counts map[string]*frontier.SourceCounts, due map[string]int, err error)
}

func (s *States) count() (*Snapshot, error) {
	start := s.Now()
	cuts := make(map[string]time.Time, len(s.maxAge))
	for name, age := range s.maxAge {
		if age > 0 {
			cuts[name] = start.Add(-age)
		}
	}
	snap := &Snapshot{Sources: map[string]*SourceState{}}
	if c, ok := s.front.(counter); ok {
		counts, due, err := c.CountBySource(cuts)
		if err != nil {
			return nil, err
		}
		for src, sc := range counts {
			snap.Sources[src] = &SourceState{SourceCounts: *sc, AgedCheckDue: due[src]}
		}
		snap.At = s.Now()
		snap.Took = snap.At.Sub(start)
		return snap, nil
	}
	var queued map[string]time.Time
	if a, ok := s.front.(agedChecks); ok {
		var err error
		if queued, err = a.AgedChecksQueued(); err != nil {
			return nil, err
		}
	}
	err := frontier.ForEach(s.front, frontier.Query{}, func(r frontier.Record) error {
		st := snap.Sources[r.Source]
		if st == nil {
			st = &SourceState{SourceCounts: frontier.SourceCounts{Reasons: map[frontier.State]map[string]int{}}}
			snap.Sources[r.Source] = st
		}
		st.Add(&r)
		if cut, ok := cuts[r.Source]; ok && frontier.AgedCheckDue(&r, cut) {
			st.AgedCheckDue++
		}
		if agedCheckQueued(queued, &r) {
			st.AgedChecksQueued++
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	snap.At = s.Now()
	snap.Took = snap.At.Sub(start)
	return snap, nil
}

// agedCheckQueued says whether r waits for the aged check queued by the
// cut of its source, or of all sources.
func agedCheckQueued(cuts map[string]time.Time, r *frontier.Record) bool {
	for _, src := range [...]string{r.Source, ""} {
		if cut, ok := cuts[src]; ok && frontier.AgedCheckDue(r, cut) {
			return true
		}
	}
	return false
}
