package rules

// Scope selects URLs by include and exclude lists in the forms of a
// source's include and exclude (a substring, or "regexp:" and an RE2
// expression, matched against the normalised URL): a URL is in scope when
// it matches an include entry, or include is empty, and no exclude entry.
// Extraction rules use it to say which pages they fill fields of.
type Scope struct {
	pats       *patternSet
	hasInclude bool
}

// NewScope compiles include and exclude; the error names the entry that
// does not compile.
func NewScope(include, exclude []string) (*Scope, error) {
	s := &Scope{pats: newPatternSet(2), hasInclude: len(include) > 0}
	for g, list := range [][]string{include, exclude} {
		for j, entry := range list {
			if err := s.pats.add(g, j, entry); err != nil {
				return nil, &ScopeError{Exclude: g == 1, Index: j, Err: err}
			}
		}
	}
	s.pats.finish()
	return s, nil
}

// ScopeError is an entry of a Scope that does not compile.
type ScopeError struct {
	Exclude bool // in exclude, else include
	Index   int
	Err     error
}

func (e *ScopeError) Error() string { return e.Err.Error() }

// Contains reports whether the normalised URL u is in the scope.
func (s *Scope) Contains(u string) bool {
	var r scanResult
	s.pats.scan(u, &r)
	if s.hasInclude && s.pats.first(0, u, &r) == noMatch {
		return false
	}
	return s.pats.first(1, u, &r) == noMatch
}
