package rules

import (
	"errors"
	"fmt"
	"regexp"
	"regexp/syntax"
	"strings"
)

// compileRegexp compiles a Perl-style expression with Go's RE2. When RE2
// refuses it for a construct Perl has and RE2 lacks by design (it guarantees
// linear time), the error names the construct, so the administrator knows
// to rewrite the pattern rather than hunt for a typo.
func compileRegexp(expr string) (*regexp.Regexp, error) {
	re, err := regexp.Compile(expr)
	if err == nil {
		return re, nil
	}
	var se *syntax.Error
	if !errors.As(err, &se) {
		return nil, err
	}
	if what := unsupported(expr, se); what != "" {
		return nil, fmt.Errorf("%s is not supported by Go's RE2 regular expressions (no backtracking); rewrite %q without it", what, expr)
	}
	return nil, fmt.Errorf("bad regular expression %q: %s: `%s`", expr, se.Code, se.Expr)
}

// unsupported names the Perl construct behind a syntax error, or "".
func unsupported(expr string, se *syntax.Error) string {
	e := se.Expr
	switch se.Code {
	case syntax.ErrInvalidEscape:
		switch {
		case len(e) == 2 && e[1] >= '1' && e[1] <= '9':
			return "the backreference " + e
		case e == `\k`, e == `\g`:
			return "the backreference " + e + "..."
		case e == `\Z`:
			return `\Z (use \z or $)`
		case e == `\G`:
			return `the \G anchor`
		case e == `\K`:
			return `\K (keep out)`
		}
	case syntax.ErrInvalidNamedCapture:
		switch {
		case strings.HasPrefix(e, "(?<="):
			return "the lookbehind (?<=...)"
		case strings.HasPrefix(e, "(?<!"):
			return "the negative lookbehind (?<!...)"
		}
	case syntax.ErrInvalidPerlOp:
		switch {
		case strings.HasPrefix(e, "(?="):
			return "the lookahead (?=...)"
		case strings.HasPrefix(e, "(?!"):
			return "the negative lookahead (?!...)"
		case strings.HasPrefix(e, "(?>"):
			return "the atomic group (?>...)"
		case strings.HasPrefix(e, "(?#"):
			return "the comment group (?#...)"
		case strings.HasPrefix(e, "(?|"):
			return "the branch reset group (?|...)"
		case strings.HasPrefix(e, "(?("):
			return "the conditional (?(...)...)"
		case e == "(?P" && strings.Contains(expr, "(?P="):
			return "the named backreference (?P=name)"
		case e == "(?P" && strings.Contains(expr, "(?P>"):
			return "the recursion (?P>name)"
		case e == "(?R" || (len(e) == 3 && e[2] >= '0' && e[2] <= '9'):
			return "the recursion " + e + ")"
		}
	case syntax.ErrInvalidRepeatOp:
		if len(e) >= 2 && e[len(e)-1] == '+' {
			return "the possessive quantifier " + e
		}
	}
	return ""
}

// requiredLiterals returns strings at least one of which occurs in every
// text the expression matches, or nil when it finds none worth using. The
// crawl-space automaton looks for them, so a regular expression runs only
// on URLs that could match it.
func requiredLiterals(re *syntax.Regexp) []string {
	switch re.Op {
	case syntax.OpLiteral:
		if re.Flags&syntax.FoldCase != 0 || len(re.Rune) == 0 {
			return nil
		}
		return []string{string(re.Rune)}
	case syntax.OpCapture, syntax.OpPlus:
		return requiredLiterals(re.Sub[0])
	case syntax.OpRepeat:
		if re.Min >= 1 {
			return requiredLiterals(re.Sub[0])
		}
	case syntax.OpConcat:
		var best []string
		for _, sub := range re.Sub {
			if lits := requiredLiterals(sub); lits != nil && shortest(lits) > shortest(best) {
				best = lits
			}
		}
		return best
	case syntax.OpAlternate:
		var all []string
		for _, sub := range re.Sub {
			lits := requiredLiterals(sub)
			if lits == nil {
				return nil
			}
			all = append(all, lits...)
		}
		return all
	}
	return nil
}

func shortest(lits []string) int {
	if lits == nil {
		return 0
	}
	n := len(lits[0])
	for _, l := range lits[1:] {
		n = min(n, len(l))
	}
	return n
}

// prefilter returns the literals that gate expr, or nil to run it always.
func prefilter(expr string) []string {
	re, err := syntax.Parse(expr, syntax.Perl)
	if err != nil {
		return nil
	}
	return requiredLiterals(re.Simplify())
}
