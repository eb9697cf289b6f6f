package esfrontier

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
)

// The cycle and the small values of Meta are documents of the meta index:
// "cycle" and "kv-<key>".

type cycleDoc struct {
	Type  string `json:"type"`
	Value uint64 `json:"value"`
}

type getAnswer struct {
	Found       bool            `json:"found"`
	SeqNo       int64           `json:"_seq_no"`
	PrimaryTerm int64           `json:"_primary_term"`
	Source      json.RawMessage `json:"_source"`
}

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// get reads one document; a missing one is Found false.
func (s *Store) get(ctx context.Context, index, id, routing string) (getAnswer, error) {
	var a getAnswer
	path := "/" + index + "/_doc/" + esc(id)
	if routing != "" {
		path += "?routing=" + esc(routing)
	}
	err := s.do(ctx, http.MethodGet, path, nil, &a)
	if isStatus(err, 404) {
		return getAnswer{}, nil
	}
	return a, err
}

func (s *Store) readCycle(ctx context.Context) (uint64, error) {
	a, err := s.get(ctx, s.meta, "cycle", "")
	if err != nil {
		return 0, &Error{Op: "read the cycle", Err: err}
	}
	if !a.Found {
		return 0, nil
	}
	var d cycleDoc
	if err := json.Unmarshal(a.Source, &d); err != nil {
		return 0, err
	}
	return d.Value, nil
}

// Cycle is the current discovery cycle, as last read (every renewal
// round reads it again).
func (s *Store) Cycle() uint64 { return s.cycle.Load() }

// observeCycle moves the cycle forward when another process began one.
func (s *Store) observeCycle(c uint64) {
	for {
		cur := s.cycle.Load()
		if c <= cur {
			return
		}
		if s.cycle.CompareAndSwap(cur, c) {
			s.cycleMu.Lock()
			close(s.cycleMoved)
			s.cycleMoved = make(chan struct{})
			s.cycleMu.Unlock()
			return
		}
	}
}

// CycleAfter returns a channel closed once the crawl's cycle is past n: a
// process between its cycles learns, at its next round, that another
// began one, and joins it.
func (s *Store) CycleAfter(n uint64) <-chan struct{} {
	s.cycleMu.Lock()
	defer s.cycleMu.Unlock()
	if s.cycle.Load() > n {
		done := make(chan struct{})
		close(done)
		return done
	}
	return s.cycleMoved
}

// BeginCycle starts the cycle after the one this process knows. When
// several processes end a cycle together, the first one's write makes it;
// the others, refused by if_seq_no, take the cycle it began.
func (s *Store) BeginCycle() (uint64, error) {
	ctx := context.Background()
	a, err := s.get(ctx, s.meta, "cycle", "")
	if err != nil {
		return 0, &Error{Op: "read the cycle", Err: err}
	}
	var d cycleDoc
	if a.Found {
		if err := json.Unmarshal(a.Source, &d); err != nil {
			return 0, err
		}
	}
	known := s.cycle.Load()
	if d.Value > known {
		s.observeCycle(d.Value)
		return d.Value, nil
	}
	next := cycleDoc{Type: "cycle", Value: d.Value + 1}
	path := "/" + s.meta + "/_doc/cycle?refresh=true"
	if a.Found {
		path += "&if_seq_no=" + strconv.FormatInt(a.SeqNo, 10) + "&if_primary_term=" + strconv.FormatInt(a.PrimaryTerm, 10)
	} else {
		path += "&op_type=create"
	}
	err = s.do(ctx, http.MethodPut, path, next, nil)
	if isStatus(err, 409) {
		c, err := s.readCycle(ctx)
		if err != nil {
			return 0, err
		}
		s.observeCycle(c)
		return s.cycle.Load(), nil
	}
	if err != nil {
		return 0, &Error{Op: "begin a cycle", Err: err}
	}
	s.observeCycle(next.Value)
	s.forgetSeen()
	s.dropMarks(next.Value)
	return next.Value, nil
}

type kvDoc struct {
	Type  string `json:"type"`
	Value string `json:"value"`
}

// GetMeta returns the value under key, nil when absent.
func (s *Store) GetMeta(key string) ([]byte, error) {
	a, err := s.get(context.Background(), s.meta, "kv-"+key, "")
	if err != nil {
		return nil, &Error{Op: "read " + key, Err: err}
	}
	if !a.Found {
		return nil, nil
	}
	var d kvDoc
	if err := json.Unmarshal(a.Source, &d); err != nil {
		return nil, err
	}
	return base64.StdEncoding.DecodeString(d.Value)
}

// PutMeta stores value under key; nil deletes it.
func (s *Store) PutMeta(key string, value []byte) error {
	ctx := context.Background()
	path := "/" + s.meta + "/_doc/" + esc("kv-"+key) + "?refresh=true"
	var err error
	if value == nil {
		err = s.do(ctx, http.MethodDelete, path, nil, nil)
		if isStatus(err, 404) {
			err = nil
		}
	} else {
		err = s.do(ctx, http.MethodPut, path, kvDoc{Type: "kv", Value: base64.StdEncoding.EncodeToString(value)}, nil)
	}
	if err != nil {
		return &Error{Op: "store " + key, Err: err}
	}
	return nil
}
