package config

import (
	"errors"
	"fmt"
	"math"
	"reflect"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"gopkg.in/yaml.v3"
)

// nodeBudget bounds the nodes one file may make the decoder visit, aliases
// expanded. A large config is a few thousand values; the bound stops alias
// bombs ("billion laughs") from turning a small file into unbounded work.
const nodeBudget = 200_000

// byteBudget bounds the bytes of the scalars the decoder visits, aliases
// expanded: a thousand aliases of one long value would otherwise be
// gigabytes to check. A file without aliases, at most maxFileSize, never
// reaches it: aliases make nothing larger than a file could be.
const byteBudget = maxFileSize

// decoder walks a yaml.Node tree alongside the Go types, so that every value
// keeps its position and every mistake is reported where it was written.
// yaml.v3's own decoder stops at type errors without columns and cannot
// tell an explicit empty list from an absent one; this walk can.
type decoder struct {
	file string
	errs Errors
	// pos holds every written value's position under its key path.
	pos map[string]Position
	// null marks key paths written with no value ("key:" or "key: ~");
	// they count as unset for defaults but keep a position for errors.
	null map[string]bool
	// bad marks key paths that already have an error, so validation does
	// not pile a second, derived complaint on the same value.
	bad map[string]bool
	// unknown marks mappings holding an unknown key: "no operator" or "no
	// action" there is most likely that key misspelled, already reported.
	unknown map[string]bool
	// numbers holds every integer and duration as written, so a range
	// error shows the value the way the file spells it.
	numbers map[string]string
	// overflow marks numbers too large for their type. They are decoded
	// as the type's extreme, which no range admits, so validation reports
	// them with the key's bounds; one no range check claims is an error
	// of its own.
	overflow map[string]bool
	// expanding holds the aliases being expanded, to stop self-reference.
	expanding map[*yaml.Node]bool
	budget    int
	bytes     int
	exhausted bool
	// said holds the errors reported: a value an alias reaches again and
	// again at the same key path is one mistake, said once.
	said map[Error]bool
}

func newDecoder(file string) *decoder {
	return &decoder{
		file:      file,
		pos:       make(map[string]Position),
		null:      make(map[string]bool),
		bad:       make(map[string]bool),
		unknown:   make(map[string]bool),
		numbers:   make(map[string]string),
		overflow:  make(map[string]bool),
		expanding: make(map[*yaml.Node]bool),
		budget:    nodeBudget,
		bytes:     byteBudget,
		said:      make(map[Error]bool),
	}
}

// written reports whether path was given a non-null value in the file.
func (d *decoder) written(path string) bool {
	_, ok := d.pos[path]
	return ok && !d.null[path]
}

func (d *decoder) errorAt(n *yaml.Node, path, format string, args ...any) {
	e := Error{File: d.file, Line: n.Line, Column: n.Column, Path: path, Msg: fmt.Sprintf(format, args...)}
	d.bad[path] = true
	if d.said[e] {
		return
	}
	d.said[e] = true
	d.errs = append(d.errs, &e)
}

func (d *decoder) spend(n *yaml.Node, path string) bool {
	if d.exhausted {
		return false
	}
	d.budget--
	if v := target(n); v.Kind == yaml.ScalarNode {
		d.bytes -= len(v.Value)
	}
	switch {
	case d.budget < 0:
		d.exhausted = true
		d.errorAt(n, path, "the file expands to more than %d values (aliases nested too deeply?)", nodeBudget)
		return false
	case d.bytes < 0:
		d.exhausted = true
		d.errorAt(n, path, "the file expands to more than %d MiB of values (aliases repeating a long value?)", byteBudget>>20)
		return false
	}
	return true
}

// target is the node an alias stands for, else n.
func target(n *yaml.Node) *yaml.Node {
	if n.Kind == yaml.AliasNode && n.Alias != nil {
		return n.Alias
	}
	return n
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// SourcePath is the key path of the i-th source, "sources[i]", the prefix
// other packages use to build paths for Config.Errorf and Config.Ref.
func SourcePath(i int) string { return "sources[" + strconv.Itoa(i) + "]" }

func indexPath(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

var durationType = reflect.TypeFor[Duration]()

// value decodes n into v and records its position under path. key is the
// mapping key that introduced n, nil for list items and the root.
func (d *decoder) value(key, n *yaml.Node, v reflect.Value, path string) {
	if !d.spend(n, path) {
		return
	}
	site := n
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || d.expanding[n] {
			d.errorAt(n, path, "alias *%s refers to itself", n.Value)
			return
		}
		d.expanding[n] = true
		defer delete(d.expanding, n)
		n = n.Alias
	}
	// A block mapping or list starts on the line after its key, and a
	// missing value has no place of its own: the key is where to look.
	at := site
	if key != nil && site.Kind != yaml.AliasNode && (isNull(n) || (n.Kind == yaml.MappingNode || n.Kind == yaml.SequenceNode) && n.Style&yaml.FlowStyle == 0) {
		at = key
	}
	d.pos[path] = Position{Line: at.Line, Column: at.Column}
	d.fill(n, v, path)
}

func isNull(n *yaml.Node) bool {
	return n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null"
}

// knownTags are the YAML tags a config may use. Others, such as a custom
// "!env HOME", would otherwise be read as the literal text after them.
var knownTags = map[string]bool{"!!str": true, "!!int": true, "!!float": true, "!!bool": true,
	"!!null": true, "!!timestamp": true, "!!map": true, "!!seq": true}

func (d *decoder) fill(n *yaml.Node, v reflect.Value, path string) {
	if tag := n.ShortTag(); !knownTags[tag] {
		d.errorAt(n, path, "YAML tag %s is not supported here", tag)
		return
	}
	if isNull(n) {
		d.null[path] = true
		// "auth:" or "elasticsearch:" with nothing under it still means the
		// block is there: it gets its defaults, or errors for what is missing.
		if v.Kind() == reflect.Pointer && v.Type().Elem().Kind() == reflect.Struct {
			v.Set(reflect.New(v.Type().Elem()))
		} else {
			v.Set(reflect.Zero(v.Type()))
		}
		return
	}
	if v.Type() == durationType {
		d.duration(n, v, path)
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		d.fill(n, v.Elem(), path)
	case reflect.Struct:
		d.structure(n, v, path)
	case reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			hint := ""
			if n.Kind == yaml.ScalarNode {
				hint = "; a list of one is written [" + n.Value + "]"
			}
			d.errorAt(n, path, "expected a list, got %s%s", describe(n), hint)
			return
		}
		s := reflect.MakeSlice(v.Type(), len(n.Content), len(n.Content))
		for i, item := range n.Content {
			d.value(nil, item, s.Index(i), indexPath(path, i))
		}
		v.Set(s)
	case reflect.Map:
		if n.Kind != yaml.MappingNode {
			d.errorAt(n, path, "expected a mapping, got %s", describe(n))
			return
		}
		m := reflect.MakeMap(v.Type())
		for _, e := range d.entries(n, path) {
			elem := reflect.New(v.Type().Elem()).Elem()
			p := joinPath(path, e.key.Value)
			d.value(e.key, e.val, elem, p)
			// A map entry's key is a name the user chose (a header, a
			// field): errors about it point at the key, not its value.
			if _, ok := d.pos[p]; ok {
				d.pos[p] = Position{Line: e.key.Line, Column: e.key.Column}
			}
			m.SetMapIndex(reflect.ValueOf(e.key.Value), elem)
		}
		v.Set(m)
	case reflect.String:
		if n.Kind != yaml.ScalarNode {
			d.errorAt(n, path, "expected a string, got %s", describe(n))
			return
		}
		v.SetString(n.Value)
	case reflect.Interface:
		// Settings passed to Elasticsearch as they are (index analysis,
		// sub-field mappings): plain YAML values, checked by the cluster.
		x, ok := d.freeform(n, path)
		switch {
		case !ok:
			// Reported inside; validation must not add "not a mapping".
			d.bad[path] = true
		case x != nil:
			v.Set(reflect.ValueOf(x))
		}
	case reflect.Bool:
		d.boolean(n, v, path)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		d.integer(n, v, path)
	default:
		// Only reachable if config.go gains a field of a kind this walk
		// does not know; say so rather than silently skip the value.
		d.errorAt(n, path, "internal error: cannot decode into %s", v.Type())
	}
}

// freeform decodes n into strings, numbers, booleans, nil, []any and
// map[string]any, the values JSON can carry, with the checks every value
// gets: tags, duplicate keys, aliases and the node budget.
func (d *decoder) freeform(n *yaml.Node, path string) (any, bool) {
	if !d.spend(n, path) {
		return nil, false
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil || d.expanding[n] {
			d.errorAt(n, path, "alias *%s refers to itself", n.Value)
			return nil, false
		}
		d.expanding[n] = true
		defer delete(d.expanding, n)
		n = n.Alias
	}
	if tag := n.ShortTag(); !knownTags[tag] || tag == "!!timestamp" {
		d.errorAt(n, path, "YAML tag %s is not supported here", tag)
		return nil, false
	}
	switch n.Kind {
	case yaml.MappingNode:
		m := make(map[string]any, len(n.Content)/2)
		for _, e := range d.entries(n, path) {
			x, ok := d.freeform(e.val, joinPath(path, e.key.Value))
			if !ok {
				return nil, false
			}
			m[e.key.Value] = x
		}
		return m, true
	case yaml.SequenceNode:
		l := make([]any, 0, len(n.Content))
		for i, item := range n.Content {
			x, ok := d.freeform(item, indexPath(path, i))
			if !ok {
				return nil, false
			}
			l = append(l, x)
		}
		return l, true
	}
	var x any
	if err := n.Decode(&x); err != nil {
		d.errorAt(n, path, "%v", err)
		return nil, false
	}
	if f, ok := x.(float64); ok && (math.IsInf(f, 0) || math.IsNaN(f)) {
		d.errorAt(n, path, "%s is not a number JSON can carry", n.Value)
		return nil, false
	}
	return x, true
}

func (d *decoder) structure(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.MappingNode {
		d.errorAt(n, path, "expected a mapping, got %s", describe(n))
		return
	}
	fields := fieldsOf(v.Type())
	for _, e := range d.entries(n, path) {
		name := e.key.Value
		i, ok := fields.index[name]
		if !ok {
			// Top-level "x-" keys hold YAML anchors for reuse elsewhere, as
			// in Docker Compose; they carry no settings of their own.
			if path == "" && strings.HasPrefix(name, "x-") {
				continue
			}
			d.errorAt(e.key, joinPath(path, name), "unknown key%s", suggest(name, v.Type()))
			d.unknown[path] = true
			continue
		}
		d.value(e.key, e.val, v.FieldByIndex(i), joinPath(path, name))
	}
}

type entry struct{ key, val *yaml.Node }

// entries lists a mapping's key/value pairs, reporting duplicate and
// non-scalar keys, with YAML merge keys ("<<: *base") expanded: a key
// written in the mapping itself wins over a merged one.
func (d *decoder) entries(n *yaml.Node, path string) []entry {
	seen := make(map[string]*yaml.Node, len(n.Content)/2)
	out := make([]entry, 0, len(n.Content)/2)
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, val := n.Content[i], n.Content[i+1]
		if k.Kind != yaml.ScalarNode || isNull(k) {
			d.errorAt(k, path, "a key must be a plain string, got %s", describe(k))
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, val)
			continue
		}
		if first, dup := seen[k.Value]; dup {
			d.errorAt(k, joinPath(path, k.Value), "duplicate key; first written at line %d", first.Line)
			continue
		}
		seen[k.Value] = k
		out = append(out, entry{k, val})
	}
	for _, m := range merges {
		out = d.merge(m, path, seen, out)
	}
	return out
}

func (d *decoder) merge(m *yaml.Node, path string, seen map[string]*yaml.Node, out []entry) []entry {
	if !d.spend(m, path) {
		return out
	}
	if m.Kind == yaml.AliasNode {
		if m.Alias == nil || d.expanding[m] {
			d.errorAt(m, path, "alias *%s refers to itself", m.Value)
			return out
		}
		d.expanding[m] = true
		defer delete(d.expanding, m)
		m = m.Alias
	}
	switch m.Kind {
	case yaml.MappingNode:
		// Merged mappings are merged quietly: their own duplicate keys are
		// reported where they are decoded in their own right, if anywhere.
		var inner []*yaml.Node
		for i := 0; i+1 < len(m.Content); i += 2 {
			k, val := m.Content[i], m.Content[i+1]
			if k.Kind != yaml.ScalarNode {
				continue
			}
			if k.ShortTag() == "!!merge" {
				inner = append(inner, val)
				continue
			}
			if _, dup := seen[k.Value]; dup {
				continue
			}
			seen[k.Value] = k
			out = append(out, entry{k, val})
		}
		for _, val := range inner {
			out = d.merge(val, path, seen, out)
		}
	case yaml.SequenceNode:
		for _, item := range m.Content {
			out = d.merge(item, path, seen, out)
		}
	default:
		d.errorAt(m, path, "a merge key (<<) takes a mapping or a list of mappings, got %s", describe(m))
	}
	return out
}

func (d *decoder) boolean(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode && n.ShortTag() == "!!bool" {
		var b bool
		if err := n.Decode(&b); err == nil {
			v.SetBool(b)
			return
		}
	}
	if n.Kind == yaml.ScalarNode {
		switch strings.ToLower(n.Value) {
		case "yes", "no", "on", "off", "y", "n":
			d.errorAt(n, path, "expected true or false, got %q (YAML 1.1 spellings are not booleans here)", n.Value)
			return
		}
	}
	d.errorAt(n, path, "expected true or false, got %s", describe(n))
}

func (d *decoder) integer(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind == yaml.ScalarNode {
		switch n.ShortTag() {
		case "!!int":
			var i int64
			if err := n.Decode(&i); err != nil || v.OverflowInt(i) {
				d.tooLarge(n, v, path, strings.HasPrefix(n.Value, "-"))
				return
			}
			d.number(n, path)
			v.SetInt(i)
			return
		case "!!float":
			// yaml.v3 reads an integer past 64 bits as a float: it is a
			// number out of range, not something other than a number.
			if wholeNumber.MatchString(n.Value) {
				d.tooLarge(n, v, path, strings.HasPrefix(n.Value, "-"))
				return
			}
		case "!!str":
			// Byte counts may be written with a unit, "10MiB", since a bare
			// 10485760 is hard to read and easy to get wrong by a digit.
			if strings.HasSuffix(path, "bytes") {
				i, err := parseSize(n.Value)
				switch {
				case errors.Is(err, errSizeRange) || err == nil && v.OverflowInt(i):
					d.tooLarge(n, v, path, false)
				case err != nil:
					d.errorAt(n, path, "%v", err)
				default:
					d.number(n, path)
					v.SetInt(i)
				}
				return
			}
		}
	}
	d.errorAt(n, path, "expected an integer, got %s", describe(n))
}

// wholeNumber is a decimal integer as YAML writes one, of any length.
var wholeNumber = regexp.MustCompile(`^[-+]?[0-9][0-9_]*$`)

// number records a numeric value as written.
func (d *decoder) number(n *yaml.Node, path string) { d.numbers[path] = n.Value }

// tooLarge stores the extreme of v's type for a number past it.
func (d *decoder) tooLarge(n *yaml.Node, v reflect.Value, path string, negative bool) {
	d.number(n, path)
	d.overflow[path] = true
	bits := v.Type().Bits()
	if negative {
		v.SetInt(-1 << (bits - 1))
	} else {
		v.SetInt(1<<(bits-1) - 1)
	}
}

func (d *decoder) duration(n *yaml.Node, v reflect.Value, path string) {
	if n.Kind != yaml.ScalarNode {
		d.errorAt(n, path, "expected a duration such as 90s or 1h30m, got %s", describe(n))
		return
	}
	switch n.ShortTag() {
	case "!!int", "!!float":
		// Zero is zero in any unit; any other bare number could mean
		// seconds or milliseconds (the Smartsite seed's sleep is in ms).
		if f, err := strconv.ParseFloat(n.Value, 64); err == nil && f == 0 {
			d.number(n, path)
			v.SetInt(0)
			return
		}
		d.errorAt(n, path, "%s has no unit, which is ambiguous: write %ss, %sms or %sm", n.Value, n.Value, n.Value, n.Value)
		return
	case "!!str":
		s := strings.TrimSpace(n.Value)
		dur, err := time.ParseDuration(s)
		switch {
		case err != nil && durationSyntax.MatchString(s):
			// Well formed but past time.Duration's 292 years.
			d.tooLarge(n, v, path, strings.HasPrefix(s, "-"))
		case err != nil:
			d.errorAt(n, path, "invalid duration %s: write a Go duration such as 500ms, 90s or 1h30m", describe(n))
		default:
			d.number(n, path)
			v.SetInt(int64(dur))
		}
		return
	}
	d.errorAt(n, path, "expected a duration such as 90s or 1h30m, got %s", describe(n))
}

// durationSyntax is what time.ParseDuration accepts, whatever the magnitude.
var durationSyntax = regexp.MustCompile(`^[-+]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+$`)

// errSizeRange is parseSize's error for a size past int64.
var errSizeRange = errors.New("size out of range")

// parseSize reads a byte count with an optional unit: 512, "64KiB", "10MB".
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	i := 0
	for i < len(t) && t[i] >= '0' && t[i] <= '9' {
		i++
	}
	if i == 0 {
		return 0, fmt.Errorf("invalid size %q: write a number of bytes, optionally with a unit (KB, KiB, MB, MiB, GB, GiB)", s)
	}
	num, err := strconv.ParseInt(t[:i], 10, 64)
	if err != nil {
		return 0, errSizeRange
	}
	var mult int64
	switch strings.ToLower(strings.TrimSpace(t[i:])) {
	case "", "b":
		mult = 1
	case "kb":
		mult = 1000
	case "kib":
		mult = 1 << 10
	case "mb":
		mult = 1000 * 1000
	case "mib":
		mult = 1 << 20
	case "gb":
		mult = 1000 * 1000 * 1000
	case "gib":
		mult = 1 << 30
	default:
		return 0, fmt.Errorf("invalid size %q: the unit must be one of B, KB, KiB, MB, MiB, GB, GiB", s)
	}
	if num > math.MaxInt64/mult {
		return 0, errSizeRange
	}
	return num * mult, nil
}

// describe names what a node holds, for "expected X, got Y" messages. It
// quotes only short scalars; nothing from a secret field can reach it, as
// those are strings and any scalar is a valid string.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.AliasNode:
		return "an alias"
	case yaml.DocumentNode:
		return "a document"
	}
	switch n.ShortTag() {
	case "!!null":
		return "nothing"
	case "!!str":
		v := n.Value
		if len(v) > 40 {
			v = v[:37] + "..."
		}
		return strconv.Quote(v)
	}
	return n.Value
}

// fields maps a struct type's yaml keys to field indexes (as
// reflect.Value.FieldByIndex takes them: an inlined struct's keys are its
// own fields', one level down).
type fields struct {
	index map[string][]int
	names []string
}

var fieldCache sync.Map // reflect.Type -> fields

func fieldsOf(t reflect.Type) fields {
	if f, ok := fieldCache.Load(t); ok {
		return f.(fields)
	}
	f := fields{index: make(map[string][]int, t.NumField())}
	for i := range t.NumField() {
		sf := t.Field(i)
		if !sf.IsExported() {
			continue
		}
		name, opts, _ := strings.Cut(sf.Tag.Get("yaml"), ",")
		if sf.Anonymous && name == "" && opts == "inline" {
			// Keys that two blocks share, declared once (Credentials).
			in := fieldsOf(sf.Type)
			for _, n := range in.names {
				f.index[n] = append([]int{i}, in.index[n]...)
				f.names = append(f.names, n)
			}
			continue
		}
		if name == "" || name == "-" {
			continue
		}
		f.index[name] = []int{i}
		f.names = append(f.names, name)
	}
	fieldCache.Store(t, f)
	return f
}

// suggest returns a "did you mean" hint for an unknown key: a close
// spelling among the keys of t, or the nested block the key belongs in
// (delay written at the source level belongs under politeness).
func suggest(key string, t reflect.Type) string {
	f := fieldsOf(t)
	best, bestDist := "", len(key)/3+1
	if bestDist > 3 {
		bestDist = 3
	}
	lk := strings.ToLower(key)
	for _, name := range f.names {
		if lk == name {
			return fmt.Sprintf("; did you mean %q? (keys are lower-case)", name)
		}
		if d := editDistance(lk, name); d <= bestDist && (best == "" || d < bestDist) {
			best, bestDist = name, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	for _, name := range f.names {
		ft := t.FieldByIndex(f.index[name]).Type
		for ft.Kind() == reflect.Pointer || ft.Kind() == reflect.Slice {
			ft = ft.Elem()
		}
		if ft.Kind() != reflect.Struct || ft == durationType {
			continue
		}
		if _, ok := fieldsOf(ft).index[lk]; ok {
			return fmt.Sprintf("; did you mean %q under %q?", lk, name)
		}
	}
	return ""
}

// editDistance is the Levenshtein distance between two short keys.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
