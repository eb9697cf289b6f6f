package htmllex

// Attr is one attribute of a raw start tag, as spans of the tag's bytes:
// the name and the value as written.
type Attr struct {
	k0, k1, v0, v1 int
}

// Name is the attribute's name as written in raw, the tag it was read from.
func (a Attr) Name(raw []byte) []byte { return raw[a.k0:a.k1] }

// RawValue is the attribute's value as written in raw, undecoded: give it
// to AppendAttrValue unless AttrIsPlain says it reads as written.
func (a Attr) RawValue(raw []byte) []byte { return raw[a.v0:a.v1] }

// ParseAttrs reads the attributes of a raw start tag the way x/net/html's
// Tokenizer does (first of duplicate names wins), as spans, without allocating.
func ParseAttrs(raw []byte, dst []Attr) []Attr {
	n := len(raw)
	i := 1
	for i < n && !IsSpace(raw[i]) && raw[i] != '/' && raw[i] != '>' {
		i++
	}
	for {
		for i < n && IsSpace(raw[i]) {
			i++
		}
		if i >= n || raw[i] == '>' {
			return dst
		}
		k0 := i
		for i < n {
			c := raw[i]
			if c == '=' && i > k0 {
				break
			}
			if IsSpace(c) || c == '/' || c == '>' {
				break
			}
			i++
		}
		k1 := i
		v0, v1 := i, i
		for i < n && IsSpace(raw[i]) {
			i++
		}
		if i < n {
			c := raw[i]
			i++
			switch {
			case c == '/':
			case c != '=':
				i--
			default:
				for i < n && IsSpace(raw[i]) {
					i++
				}
				if i < n {
					q := raw[i]
					switch q {
					case '>':
					case '\'', '"':
						i++
						v0 = i
						for i < n && raw[i] != q {
							i++
						}
						v1 = i
						if i < n {
							i++
						}
					default:
						v0 = i
						for i < n && !IsSpace(raw[i]) && raw[i] != '>' {
							i++
						}
						v1 = i
					}
				}
			}
		}
		if k1 > k0 && !hasAttrName(raw, dst, raw[k0:k1]) {
			dst = append(dst, Attr{k0, k1, v0, v1})
		}
	}
}

// hasAttrName reports whether attrs has name already. Names compare as the
// Tokenizer compares them, ASCII letters only: "ſrc" is not "src".
func hasAttrName(raw []byte, attrs []Attr, name []byte) bool {
	for _, a := range attrs {
		if EqualFoldASCII(a.Name(raw), name) {
			return true
		}
	}
	return false
}

// EqualFoldASCII reports whether b and s are equal with ASCII letters
// folded, and only those: HTML's names are case-insensitive in ASCII alone.
func EqualFoldASCII[T string | []byte](b []byte, s T) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range b {
		c, d := b[i], s[i]
		if c != d && LowerASCII(c) != LowerASCII(d) {
			return false
		}
	}
	return true
}

// LowerASCII lower-cases an ASCII letter and leaves any other byte.
func LowerASCII(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
