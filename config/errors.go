package config

import (
	"fmt"
	"strings"
)

// Error is one problem in a configuration file, tied to the place it is about.
type Error struct {
	File   string
	Line   int
	Column int
	// Path is the key path, for example "sources[0].exclude[2]".
	Path string
	Msg  string
}

func (e *Error) Error() string {
	loc := e.File
	switch {
	case e.Line > 0 && e.Column > 0:
		loc = fmt.Sprintf("%s:%d:%d", e.File, e.Line, e.Column)
	case e.Line > 0:
		// YAML syntax errors come with a line but no column.
		loc = fmt.Sprintf("%s:%d", e.File, e.Line)
	}
	if e.Path == "" {
		return loc + ": " + e.Msg
	}
	return loc + ": " + e.Path + ": " + e.Msg
}

// Errors is every problem found in one file, in file order.
type Errors []*Error

func (es Errors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Pos returns where the value at path starts. A path that was not written in
// the file (a default) falls back to its nearest written parent.
func (c *Config) Pos(path string) Position {
	for p := path; p != ""; p = parentPath(p) {
		if pos, ok := c.positions[p]; ok {
			return pos
		}
	}
	return Position{}
}

// Errorf builds an error about the value at path.
func (c *Config) Errorf(path, format string, args ...any) *Error {
	pos := c.Pos(path)
	return &Error{File: c.File, Line: pos.Line, Column: pos.Column, Path: path, Msg: fmt.Sprintf(format, args...)}
}

// Ref names the config line behind path, "file:line:col path", for explain
// output and logs that must point an administrator at the deciding rule.
func (c *Config) Ref(path string) string {
	pos := c.Pos(path)
	if pos.Line == 0 {
		return path
	}
	return fmt.Sprintf("%s:%d:%d %s", c.File, pos.Line, pos.Column, path)
}

// parentPath strips the last element: "a.b[2]" -> "a.b", "a.b" -> "a".
func parentPath(p string) string {
	i := strings.LastIndexAny(p, ".[")
	if i < 0 {
		return ""
	}
	return p[:i]
}
