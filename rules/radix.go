package rules

import "strings"

// radix is a compressed trie of literal keys, each carrying rule numbers.
// Walking a string visits every key that is a prefix of it (or, for a tree
// built with reversed keys, a suffix), in time bounded by the string's
// length rather than by the number of keys.
type radix struct {
	root    rnode
	reverse bool
}

type rnode struct {
	label string
	kids  []*rnode // sorted by first byte of label
	vals  []int32
}

func reverseString(s string) string {
	b := []byte(s)
	for i, j := 0, len(b)-1; i < j; i, j = i+1, j-1 {
		b[i], b[j] = b[j], b[i]
	}
	return string(b)
}

func (t *radix) insert(key string, v int32) {
	if t.reverse {
		key = reverseString(key)
	}
	n := &t.root
	for {
		if key == "" {
			n.vals = append(n.vals, v)
			return
		}
		i := n.kid(key[0])
		if i < 0 {
			n.add(&rnode{label: key, vals: []int32{v}})
			return
		}
		c := n.kids[i]
		l := commonPrefix(c.label, key)
		if l < len(c.label) {
			mid := &rnode{label: c.label[:l], kids: []*rnode{c}}
			c.label = c.label[l:]
			n.kids[i] = mid
			c = mid
		}
		n, key = c, key[l:]
	}
}

func commonPrefix(a, b string) int {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	return i
}

func (n *rnode) kid(b byte) int {
	for i, c := range n.kids {
		if c.label[0] == b {
			return i
		}
	}
	return -1
}

func (n *rnode) add(c *rnode) {
	i := 0
	for i < len(n.kids) && n.kids[i].label[0] < c.label[0] {
		i++
	}
	n.kids = append(n.kids, nil)
	copy(n.kids[i+1:], n.kids[i:])
	n.kids[i] = c
}

// collect appends the values of every key that is a prefix of s (a suffix
// for a reversed tree).
func (t *radix) collect(s string, dst []int32) []int32 {
	n := &t.root
	dst = append(dst, n.vals...)
	pos := 0 // bytes of s consumed
	for pos < len(s) && len(n.kids) > 0 {
		var b byte
		if t.reverse {
			b = s[len(s)-1-pos]
		} else {
			b = s[pos]
		}
		i := n.kid(b)
		if i < 0 {
			return dst
		}
		c := n.kids[i]
		if len(c.label) > len(s)-pos {
			return dst
		}
		if t.reverse {
			end := len(s) - pos
			if !reversedEqual(s[end-len(c.label):end], c.label) {
				return dst
			}
		} else if !strings.HasPrefix(s[pos:], c.label) {
			return dst
		}
		pos += len(c.label)
		n = c
		dst = append(dst, n.vals...)
	}
	return dst
}

// reversedEqual reports whether a read backwards equals rev.
func reversedEqual(a, rev string) bool {
	for i := 0; i < len(rev); i++ {
		if a[len(a)-1-i] != rev[i] {
			return false
		}
	}
	return true
}
