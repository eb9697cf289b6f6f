package rules

import (
	"math"
	"regexp"
	"strings"

	"github.com/crawlspace/crawlspace/urlnorm"
)

// regexpPrefix marks a pattern entry as a regular expression, as in
// Funnelback's "regexp:search\?date=|^https:".
const regexpPrefix = "regexp:"

// noMatch is the rule number of "no rule matched"; first-match-wins takes
// the minimum, so it must compare greater than every real index.
const noMatch = math.MaxInt32

// patternSet matches a URL against several ordered lists of patterns at
// once (include, exclude, kill_patterns; or one reject list). A substring
// pattern is found by one Aho-Corasick pass shared by all lists; a regexp
// entry runs only when the literals it requires were seen in that pass and
// when no earlier entry of its list already matched.
type patternSet struct {
	ac      *acMatcher
	hits    [][]patternHit // per automaton pattern
	groups  []patternGroup
	ntrig   int
	literal map[string]int32 // automaton pattern number of each literal
	builder *acBuilder
}

type patternHit struct {
	group   int8 // -1: a regexp trigger
	index   int32
	trigger int32
}

type patternGroup struct {
	regexps []rxEntry // in list order
}

type rxEntry struct {
	index   int32
	re      *regexp.Regexp
	trigger int32 // -1: no usable literal, always run
}

// scanResult is what one pass found; it lives on the caller's stack.
type scanResult struct {
	first [3]int32 // per group: lowest matching substring entry
	trig  [4]uint64
	more  []uint64 // triggers past 256
}

func newPatternSet(groups int) *patternSet {
	return &patternSet{groups: make([]patternGroup, groups), literal: map[string]int32{}, builder: newACBuilder()}
}

func (ps *patternSet) addLiteral(lit string, h patternHit) {
	id, ok := ps.literal[lit]
	if !ok {
		id = int32(len(ps.hits))
		ps.literal[lit] = id
		ps.hits = append(ps.hits, nil)
		ps.builder.add(lit, id)
	}
	ps.hits[id] = append(ps.hits[id], h)
}

// add compiles one list entry: a substring, or "regexp:" and an expression.
func (ps *patternSet) add(group int, index int, entry string) error {
	if expr, ok := strings.CutPrefix(entry, regexpPrefix); ok {
		re, err := compileRegexp(expr)
		if err != nil {
			return err
		}
		rx := rxEntry{index: int32(index), re: re, trigger: -1}
		if lits := prefilter(expr); lits != nil {
			rx.trigger = int32(ps.ntrig)
			ps.ntrig++
			for _, l := range lits {
				ps.addLiteral(l, patternHit{group: -1, trigger: rx.trigger})
			}
		}
		ps.groups[group].regexps = append(ps.groups[group].regexps, rx)
		return nil
	}
	// Written by hand, matched against normalised URLs: normalise the
	// escapes the same way ("my docs" finds "my%20docs").
	lit := urlnorm.Escape(entry)
	if lit == "" {
		return nil
	}
	ps.addLiteral(lit, patternHit{group: int8(group), index: int32(index)})
	return nil
}

func (ps *patternSet) finish() {
	ps.ac = ps.builder.build()
	ps.builder, ps.literal = nil, nil
}

func (ps *patternSet) empty() bool {
	if len(ps.hits) > 0 {
		return false
	}
	for _, g := range ps.groups {
		if len(g.regexps) > 0 {
			return false
		}
	}
	return true
}

// scan runs the automaton over u.
func (ps *patternSet) scan(u string, r *scanResult) {
	for i := range r.first {
		r.first[i] = noMatch
	}
	r.trig = [4]uint64{}
	if ps.ntrig > len(r.trig)*64 {
		r.more = make([]uint64, (ps.ntrig-len(r.trig)*64+63)/64)
	}
	if len(ps.hits) == 0 {
		return
	}
	ps.ac.scan(u, func(p int32) {
		for _, h := range ps.hits[p] {
			if h.group >= 0 {
				r.first[h.group] = min(r.first[h.group], h.index)
				continue
			}
			t := int(h.trigger)
			if t < len(r.trig)*64 {
				r.trig[t/64] |= 1 << (t % 64)
			} else {
				t -= len(r.trig) * 64
				r.more[t/64] |= 1 << (t % 64)
			}
		}
	})
}

func (r *scanResult) triggered(t int32) bool {
	if t < 0 {
		return true
	}
	if int(t) < len(r.trig)*64 {
		return r.trig[t/64]&(1<<(t%64)) != 0
	}
	t -= int32(len(r.trig) * 64)
	return r.more[t/64]&(1<<(t%64)) != 0
}

// first returns the lowest entry of group that matches u, or noMatch.
func (ps *patternSet) first(group int, u string, r *scanResult) int32 {
	best := r.first[group]
	for _, rx := range ps.groups[group].regexps {
		if rx.index > best {
			break
		}
		if r.triggered(rx.trigger) && rx.re.MatchString(u) {
			return rx.index
		}
	}
	return best
}
