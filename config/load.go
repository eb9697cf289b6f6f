package config

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"

	"gopkg.in/yaml.v3"
)

// maxFileSize bounds what Load reads: a configuration is a few kilobytes,
// and anything near this size is a wrong path, not a config.
const maxFileSize = 8 << 20

// Load reads, decodes, defaults and validates the configuration at path.
// On failure the error is Errors, every problem in file order; relative
// paths in the file are resolved against path's directory.
func Load(path string) (*Config, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read: " + pathErr(err)}}
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileSize+1))
	if err != nil {
		return nil, Errors{{File: path, Msg: "cannot read: " + pathErr(err)}}
	}
	if len(data) > maxFileSize {
		return nil, Errors{{File: path, Msg: fmt.Sprintf("larger than %d MiB; is this a configuration file?", maxFileSize>>20)}}
	}
	return Parse(path, data)
}

func pathErr(err error) string {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}

// Parse decodes, defaults and validates a configuration held in memory.
// file names it in errors and is the base for relative paths.
func Parse(file string, data []byte) (*Config, error) {
	root, err := parseYAML(file, data)
	if err != nil {
		return nil, err
	}
	d := newDecoder(file)
	c := &Config{File: file}
	d.value(nil, root, reflect.ValueOf(c).Elem(), "")
	delete(d.pos, "")
	c.positions = d.pos
	c.setDefaults(d.written)
	errs := d.errs
	if !d.exhausted {
		errs = append(errs, c.check(d)...)
	}
	if len(errs) > 0 {
		slices.SortStableFunc(errs, func(a, b *Error) int {
			if a.Line != b.Line {
				return a.Line - b.Line
			}
			return a.Column - b.Column
		})
		return nil, errs
	}
	return c, nil
}

// parseYAML returns the root mapping of the file's one document.
func parseYAML(file string, data []byte) (root *yaml.Node, err error) {
	defer func() {
		// yaml.v3 turns its own failures into errors; anything else escaping
		// it is a bug there, and a bad file must not crash a service over it.
		if r := recover(); r != nil {
			root, err = nil, Errors{{File: file, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		if errors.Is(err, io.EOF) {
			return nil, Errors{{File: file, Msg: "the file is empty: it needs at least a sources list"}}
		}
		return nil, Errors{syntaxError(file, data, err)}
	}
	var next yaml.Node
	switch err := dec.Decode(&next); {
	case errors.Is(err, io.EOF):
	case err != nil:
		return nil, Errors{syntaxError(file, data, err)}
	default:
		return nil, Errors{{File: file, Line: next.Line, Column: next.Column, Msg: "a second YAML document; a configuration file holds exactly one"}}
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, Errors{{File: file, Msg: "the file is empty: it needs at least a sources list"}}
	}
	root = doc.Content[0]
	if isNull(root) {
		return nil, Errors{{File: file, Msg: "the file is empty: it needs at least a sources list"}}
	}
	if root.Kind != yaml.MappingNode {
		return nil, Errors{{File: file, Line: root.Line, Column: root.Column, Msg: "expected a mapping of settings (key: value lines), got " + describe(root)}}
	}
	return root, nil
}

var yamlLine = regexp.MustCompile(`^yaml: line (\d+): (.*)$`)

// syntaxError reports a YAML syntax error. yaml.v3 gives no column, and its
// line is often the start of the enclosing block rather than the line at
// fault, so the line is refined to the line that stops the file from parsing;
// yaml's own line is kept in the message when it differs.
func syntaxError(file string, data []byte, err error) *Error {
	msg := err.Error()
	line := 0
	if m := yamlLine.FindStringSubmatch(msg); m != nil {
		line, _ = strconv.Atoi(m[1])
		msg = m[2]
	} else if len(msg) > 6 && msg[:6] == "yaml: " {
		msg = msg[6:]
	}
	if at := breakingLine(data); at > line {
		if line > 0 {
			msg += fmt.Sprintf(" (yaml points at line %d)", line)
		}
		line = at
	}
	return &Error{File: file, Line: line, Msg: "YAML syntax: " + msg}
}

// breakingLine finds a line n such that the first n-1 lines parse and the
// first n do not, by bisection, so it costs a few parses even for a large
// file. In block-style YAML that is the line at fault. 0 when not found.
func breakingLine(data []byte) int {
	var ends []int // ends[i] is the offset just past line i+1
	for i, b := range data {
		if b == '\n' {
			ends = append(ends, i+1)
		}
	}
	if len(ends) == 0 || ends[len(ends)-1] != len(data) {
		ends = append(ends, len(data))
	}
	lo, hi := 0, len(ends) // the first lo lines parse; the first hi lines do not
	if parses(data) {
		return 0
	}
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if parses(data[:ends[mid-1]]) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return hi
}

func parses(data []byte) (ok bool) {
	defer func() {
		if recover() != nil {
			ok = false
		}
	}()
	dec := yaml.NewDecoder(bytes.NewReader(data))
	for {
		var n yaml.Node
		if err := dec.Decode(&n); err != nil {
			return errors.Is(err, io.EOF)
		}
	}
}
