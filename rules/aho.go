package rules

// An Aho-Corasick automaton finds every occurrence of many literal strings
// in one pass over a URL. Small automata (nearly every config) are turned
// into a full DFA over byte classes, one table lookup per byte; large ones
// (a reject list of many thousand URLs) keep goto and failure links, so
// memory stays proportional to the patterns.

// maxDenseCells bounds the DFA table: 2M cells of 4 bytes.
const maxDenseCells = 1 << 21

type acMatcher struct {
	// Dense form.
	class  [256]uint8
	nclass int
	delta  []int32

	// Sparse form: sorted edges per state, failure links, and a full row
	// for the root, where most bytes of a URL land.
	rootNext  [256]int32
	edgeStart []int32 // edges of state s are edgeStart[s]:edgeStart[s+1]
	edgeByte  []byte
	edgeNext  []int32
	fail      []int32

	// outHead[s] starts the chain of patterns ending at state s, including
	// those ending at its failure states; -1 when none.
	outHead []int32
	outPat  []int32
	outNext []int32
}

// acBuilder collects patterns; the pattern numbers are their insertion order.
type acBuilder struct {
	kids [][]acEdge
	term [][]int32
}

type acEdge struct {
	b    byte
	next int32
}

func newACBuilder() *acBuilder {
	return &acBuilder{kids: [][]acEdge{nil}, term: [][]int32{nil}}
}

func (b *acBuilder) add(pattern string, id int32) {
	s := int32(0)
	for i := 0; i < len(pattern); i++ {
		c := pattern[i]
		next := int32(-1)
		for _, e := range b.kids[s] {
			if e.b == c {
				next = e.next
				break
			}
		}
		if next < 0 {
			next = int32(len(b.kids))
			b.kids = append(b.kids, nil)
			b.term = append(b.term, nil)
			b.kids[s] = append(b.kids[s], acEdge{c, next})
		}
		s = next
	}
	b.term[s] = append(b.term[s], id)
}

func (b *acBuilder) build() *acMatcher {
	n := len(b.kids)
	m := &acMatcher{fail: make([]int32, n), outHead: make([]int32, n)}
	for i := range m.outHead {
		m.outHead[i] = -1
	}
	// Breadth-first, so a state's failure state is done before it.
	order := make([]int32, 0, n)
	order = append(order, 0)
	for i := 0; i < len(order); i++ {
		s := order[i]
		for _, e := range b.kids[s] {
			order = append(order, e.next)
		}
	}
	goTo := func(s int32, c byte) int32 {
		for _, e := range b.kids[s] {
			if e.b == c {
				return e.next
			}
		}
		return -1
	}
	for _, s := range order {
		for _, e := range b.kids[s] {
			f := int32(0)
			if s != 0 {
				for f = m.fail[s]; ; f = m.fail[f] {
					if t := goTo(f, e.b); t >= 0 {
						f = t
						break
					}
					if f == 0 {
						break
					}
				}
			}
			m.fail[e.next] = f
		}
		// Own outputs first, then the failure state's chain, shared.
		head := int32(-1)
		if s != 0 {
			head = m.outHead[m.fail[s]]
		}
		for i := len(b.term[s]) - 1; i >= 0; i-- {
			m.outPat = append(m.outPat, b.term[s][i])
			m.outNext = append(m.outNext, head)
			head = int32(len(m.outPat) - 1)
		}
		m.outHead[s] = head
	}

	used := [256]bool{}
	for _, ks := range b.kids {
		for _, e := range ks {
			used[e.b] = true
		}
	}
	m.nclass = 1
	for c := range used {
		if used[c] {
			m.class[c] = uint8(m.nclass)
			m.nclass++
		}
	}
	if m.nclass > 255 || n*m.nclass > maxDenseCells {
		m.nclass = 0
		m.buildSparse(b, n)
		return m
	}
	m.delta = make([]int32, n*m.nclass)
	for _, s := range order {
		row := m.delta[int(s)*m.nclass : int(s+1)*m.nclass]
		if s != 0 {
			copy(row, m.delta[int(m.fail[s])*m.nclass:int(m.fail[s]+1)*m.nclass])
		}
		for _, e := range b.kids[s] {
			row[m.class[e.b]] = e.next
		}
	}
	m.fail = nil
	return m
}

func (m *acMatcher) buildSparse(b *acBuilder, n int) {
	m.edgeStart = make([]int32, n+1)
	for s := 0; s < n; s++ {
		m.edgeStart[s] = int32(len(m.edgeByte))
		ks := b.kids[s]
		// Sorted, so a state's edges can be scanned in order.
		for i := 1; i < len(ks); i++ {
			for j := i; j > 0 && ks[j].b < ks[j-1].b; j-- {
				ks[j], ks[j-1] = ks[j-1], ks[j]
			}
		}
		for _, e := range ks {
			m.edgeByte = append(m.edgeByte, e.b)
			m.edgeNext = append(m.edgeNext, e.next)
		}
	}
	m.edgeStart[n] = int32(len(m.edgeByte))
	for _, e := range b.kids[0] {
		m.rootNext[e.b] = e.next
	}
}

func (m *acMatcher) step(s int32, c byte) int32 {
	if m.delta != nil {
		return m.delta[int(s)*m.nclass+int(m.class[c])]
	}
	for s != 0 {
		for i := m.edgeStart[s]; i < m.edgeStart[s+1]; i++ {
			if eb := m.edgeByte[i]; eb == c {
				return m.edgeNext[i]
			} else if eb > c {
				break
			}
		}
		s = m.fail[s]
	}
	return m.rootNext[c]
}

// scan calls hit for every occurrence of every pattern in s.
func (m *acMatcher) scan(s string, hit func(pattern int32)) {
	st := int32(0)
	if m.delta != nil {
		delta, class, nclass := m.delta, &m.class, m.nclass
		for i := 0; i < len(s); i++ {
			st = delta[int(st)*nclass+int(class[s[i]])]
			for o := m.outHead[st]; o >= 0; o = m.outNext[o] {
				hit(m.outPat[o])
			}
		}
		return
	}
	for i := 0; i < len(s); i++ {
		st = m.step(st, s[i])
		for o := m.outHead[st]; o >= 0; o = m.outNext[o] {
			hit(m.outPat[o])
		}
	}
}
