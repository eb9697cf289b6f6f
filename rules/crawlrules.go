package rules

import (
	"fmt"
	"net/url"
	"regexp"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/net/idna"
	"golang.org/x/text/runes"
	"golang.org/x/text/transform"
	"golang.org/x/text/unicode/norm"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/urlnorm"
)

// Exalead-style crawl rules: boolean trees of atoms over the parts of a URL,
// the first matching rule of a source giving its actions.
//
// Values of the kinds exact, prefix and suffix, and of every shortcut, are
// literal strings; a backslash before a character also makes it literal, so
// a value escaped as the Exalead seed advises ("foo\.com") means the same as
// "foo.com". The kind inside takes a regular expression (RE2), unanchored
// unless it anchors itself with ^ or $. Literals are what the seed's
// examples need: Domain foo.com is host-suffix ".foo.com" or host-exact
// "foo.com", and only a literal ".foo.com" leaves barfoo.com out.
//
// Normalisation: none compares case-sensitively; lower (the default: "the
// default is a case insensitive match") ignores case; norm also decodes
// percent-escapes, shows internationalised host names in Unicode and drops
// accents, so "/cafe" matches /caf%C3%A9.

type field uint8

const (
	fURL field = iota
	fScheme
	fHost
	fPath
	fQuery
	nFields
)

var fieldNames = map[string]field{"url": fURL, "scheme": fScheme, "host": fHost, "path": fPath, "query": fQuery}

type normMode uint8

const (
	nLower normMode = iota
	nNone
	nNorm
)

type op uint8

const (
	opAnd op = iota
	opOr
	opNot
	opExact
	opPrefix
	opSuffix
	opContains
	opRegexp
	opLength
)

type mnode struct {
	op     op
	field  field
	norm   normMode
	kids   []mnode
	lit    string
	re     *regexp.Regexp
	lo, hi int // length range; hi < 0 is unbounded
}

// urlFields are the parts of one URL, with their norm forms made on demand.
type urlFields struct {
	v      [nFields]string
	normed [nFields]string
	done   uint8
}

func (f *urlFields) get(fl field, n normMode) string {
	if n != nNorm {
		return f.v[fl]
	}
	if f.done&(1<<fl) == 0 {
		f.normed[fl] = normFold(f.v[fl], fl)
		f.done |= 1 << fl
	}
	return f.normed[fl]
}

var foldAccents = runes.Remove(runes.In(unicode.Mn))

// normFold is the "norm" normalisation: escapes decoded, Unicode host
// names, accents dropped, lower case.
func normFold(s string, fl field) string {
	if fl == fHost {
		if u, err := idna.ToUnicode(s); err == nil {
			s = u
		}
	} else if d, err := url.PathUnescape(s); err == nil {
		s = d
	}
	if !isASCII(s) { // decomposing, dropping marks and recomposing leave ASCII as it is
		t := transform.Chain(norm.NFD, foldAccents, norm.NFC)
		if r, _, err := transform.String(t, s); err == nil {
			s = r
		}
	}
	return strings.ToLower(s)
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

func (n *mnode) eval(f *urlFields) bool {
	switch n.op {
	case opAnd:
		for i := range n.kids {
			if !n.kids[i].eval(f) {
				return false
			}
		}
		return true
	case opOr:
		for i := range n.kids {
			if n.kids[i].eval(f) {
				return true
			}
		}
		return false
	case opNot:
		return !n.kids[0].eval(f)
	case opLength:
		l := len(f.get(n.field, n.norm))
		return l >= n.lo && (n.hi < 0 || l <= n.hi)
	case opRegexp:
		return n.re.MatchString(f.get(n.field, n.norm))
	}
	s := f.get(n.field, n.norm)
	if n.norm == nLower {
		switch n.op {
		case opExact:
			return len(s) == len(n.lit) && hasPrefixFold(s, n.lit)
		case opPrefix:
			return hasPrefixFold(s, n.lit)
		case opSuffix:
			return len(s) >= len(n.lit) && hasPrefixFold(s[len(s)-len(n.lit):], n.lit)
		case opContains:
			return containsFold(s, n.lit)
		}
	}
	switch n.op {
	case opExact:
		return s == n.lit
	case opPrefix:
		return strings.HasPrefix(s, n.lit)
	case opSuffix:
		return strings.HasSuffix(s, n.lit)
	case opContains:
		return strings.Contains(s, n.lit)
	}
	return false
}

// hasPrefixFold reports whether s starts with lower, a lower-case ASCII
// literal, ignoring the case of s. Normalised URLs are ASCII.
func hasPrefixFold(s, lower string) bool {
	if len(s) < len(lower) {
		return false
	}
	for i := 0; i < len(lower); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

func containsFold(s, lower string) bool {
	for i := 0; i+len(lower) <= len(s); i++ {
		if hasPrefixFold(s[i:], lower) {
			return true
		}
	}
	return false
}

// crawlRule is one compiled rule with its actions.
type crawlRule struct {
	match    mnode
	ignore   bool  // ignore: true, or accept: false
	index    *bool // nil leaves the decision to the other rule forms
	follow   *bool
	source   string
	priority int
	meta     map[string][]string
	ref      string
	// renderSet: the rule has a render block, which renders with render
	// (nil for enabled: false).
	renderSet bool
	render    *Render
}

// matchCompiler compiles match trees of one source, reporting positioned errors.
type matchCompiler struct {
	cfg  *config.Config
	errs *config.Errors
}

func (mc *matchCompiler) errorf(path, format string, args ...any) {
	*mc.errs = append(*mc.errs, mc.cfg.Errorf(path, format, args...))
}

func (mc *matchCompiler) compile(m *config.Match, path string) mnode {
	switch {
	case m.And != nil:
		return mc.list(opAnd, m.And, path+".and")
	case m.Or != nil:
		return mc.list(opOr, m.Or, path+".or")
	case m.Not != nil:
		return mnode{op: opNot, kids: []mnode{mc.compile(m.Not, path+".not")}}
	case m.Atom != nil:
		return mc.atom(m.Atom, path+".atom")
	case m.Domain != nil:
		v := mc.literal(fHost, nLower, *m.Domain, path+".domain")
		v = strings.TrimPrefix(v, ".")
		return mnode{op: opOr, kids: []mnode{
			{op: opExact, field: fHost, lit: v},
			{op: opSuffix, field: fHost, lit: "." + v},
		}}
	case m.Host != nil:
		return mnode{op: opExact, field: fHost, lit: mc.literal(fHost, nLower, *m.Host, path+".host")}
	case m.Path != nil:
		return mnode{op: opPrefix, field: fPath, lit: mc.literal(fPath, nLower, *m.Path, path+".path")}
	case m.Ext != nil:
		return mnode{op: opSuffix, field: fPath, lit: mc.literal(fPath, nLower, *m.Ext, path+".ext")}
	case m.URL != nil:
		return mnode{op: opExact, field: fURL, lit: mc.urlValue(*m.URL, path+".url", nLower)}
	case m.Scheme != nil:
		return mnode{op: opExact, field: fScheme, lit: mc.literal(fScheme, nLower, *m.Scheme, path+".scheme")}
	case m.Query != nil:
		return mnode{op: opExact, field: fQuery, lit: mc.queryValue(*m.Query, nLower)}
	case m.InQuery != nil:
		return mnode{op: opContains, field: fQuery, lit: mc.literal(fQuery, nLower, *m.InQuery, path+".inquery")}
	}
	// Length: config checked that a node holds exactly one operator.
	return length(fieldNames[m.Length.Field], m.Length.Value, nNone)
}

func (mc *matchCompiler) list(o op, ms []config.Match, path string) mnode {
	n := mnode{op: o, kids: make([]mnode, len(ms))}
	for i := range ms {
		n.kids[i] = mc.compile(&ms[i], fmt.Sprintf("%s[%d]", path, i))
	}
	return n
}

// length compiles a range config checked to parse.
func length(fl field, value string, nm normMode) mnode {
	lo, hi, _ := config.ParseLengthRange(value)
	return mnode{op: opLength, field: fl, norm: nm, lo: lo, hi: hi}
}

func (mc *matchCompiler) atom(a *config.Atom, path string) mnode {
	fl := fieldNames[a.Field]
	nm := nLower
	switch a.Norm {
	case "none":
		nm = nNone
	case "norm":
		nm = nNorm
	}
	switch a.Kind {
	case "length":
		return length(fl, a.Value, nm)
	case "inside":
		expr := a.Value
		if nm != nNone {
			expr = "(?i)" + expr
		}
		re, err := compileRegexp(expr)
		if err != nil {
			mc.errorf(path+".value", "%v", err)
			return mnode{op: opOr}
		}
		return mnode{op: opRegexp, field: fl, norm: nm, re: re}
	default: // exact, prefix or suffix: config checked the kind
		var lit string
		switch {
		case fl == fURL && a.Kind == "exact" && nm != nNorm:
			lit = mc.urlValue(a.Value, path+".value", nm)
		case fl == fQuery && a.Kind == "exact" && nm != nNorm:
			lit = mc.queryValue(a.Value, nm)
		default:
			lit = mc.literal(fl, nm, a.Value, path+".value")
		}
		o := map[string]op{"exact": opExact, "prefix": opPrefix, "suffix": opSuffix}[a.Kind]
		return mnode{op: o, field: fl, norm: nm, lit: lit}
	}
}

// unescapeLiteral drops the backslash of "\x", the seed's way of writing a
// special character literally.
func unescapeLiteral(v string) string {
	if !strings.Contains(v, `\`) {
		return v
	}
	var b strings.Builder
	for i := 0; i < len(v); i++ {
		if v[i] == '\\' && i+1 < len(v) {
			i++
		}
		b.WriteByte(v[i])
	}
	return b.String()
}

// literal prepares a literal value to compare with the normalised field.
func (mc *matchCompiler) literal(fl field, nm normMode, v, path string) string {
	v = unescapeLiteral(v)
	if nm == nNorm {
		return normFold(v, fl)
	}
	switch fl {
	case fHost:
		if a, err := idna.Lookup.ToASCII(v); err == nil && a != "" {
			v = a
		}
		v = strings.ToLower(v)
	case fScheme:
		v = strings.ToLower(v)
	default:
		v = urlnorm.Escape(v)
	}
	if nm == nLower {
		v = strings.ToLower(v)
	}
	return v
}

// urlValue normalises a whole-URL value as URLs are when found, so it
// equals the URL the rules are given (query sorted, nothing filtered).
func (mc *matchCompiler) urlValue(v, path string, nm normMode) string {
	u, err := urlnorm.Normalize(unescapeLiteral(v))
	if err != nil {
		mc.errorf(path, "%v", err)
		return ""
	}
	if nm == nLower {
		u = strings.ToLower(u)
	}
	return u
}

// queryValue normalises an exact query the way URLs' queries are.
func (mc *matchCompiler) queryValue(v string, nm normMode) string {
	v = unescapeLiteral(v)
	u, err := urlnorm.Normalize("http://q/?" + v)
	if err == nil {
		if _, q, ok := strings.Cut(u, "?"); ok {
			v = q
		} else {
			v = ""
		}
	}
	if nm == nLower {
		v = strings.ToLower(v)
	}
	return v
}
