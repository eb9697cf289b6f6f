package config

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// RuleLine is the shape of one IBM-style `rules` entry,
// "allow|forbid domain|prefix|address TARGET [NETMASK]". Config checks only
// the shape; what a target matches is the rules engine's business.
type RuleLine struct {
	// Allow is true for "allow", false for "forbid".
	Allow bool
	// Type is "domain", "prefix" or "address".
	Type string
	// Target is the domain pattern, URL prefix pattern or IP address.
	Target string
	// Mask is an address rule's netmask, "" when the rule gives none.
	Mask string
}

// ParseRuleLine splits a rules entry into its words. The action and type
// are case-insensitive. As in the IBM seed ("forbid http://sales.ibm.com/*fs/*"),
// the word "prefix" may be left out before a target that is a URL.
func ParseRuleLine(s string) (RuleLine, error) {
	w := strings.Fields(s)
	var r RuleLine
	if len(w) == 0 {
		return r, errors.New(`empty rule; write "allow|forbid domain|prefix|address TARGET"`)
	}
	switch strings.ToLower(w[0]) {
	case "allow":
		r.Allow = true
	case "forbid":
	default:
		return r, fmt.Errorf(`the action must be allow or forbid, got %q`, w[0])
	}
	if len(w) == 2 && strings.Contains(w[1], "://") {
		r.Type, r.Target = "prefix", w[1]
		return r, nil
	}
	if len(w) < 3 {
		return r, errors.New(`a rule is "allow|forbid domain|prefix|address TARGET"`)
	}
	r.Type, r.Target = strings.ToLower(w[1]), w[2]
	switch r.Type {
	case "domain", "prefix":
		if len(w) > 3 {
			return r, fmt.Errorf("a %s rule takes one target, got %d words after %q", r.Type, len(w)-2, w[1])
		}
	case "address":
		if len(w) > 4 {
			return r, fmt.Errorf("an address rule takes an address and an optional netmask, got %d words after %q", len(w)-2, w[1])
		}
		if len(w) == 4 {
			r.Mask = w[3]
		}
	default:
		return r, fmt.Errorf("the rule type must be domain, prefix or address, got %q", w[1])
	}
	return r, nil
}

// maxLengthBound bounds the numbers of a length range: no URL is longer
// than max_url_length allows, 1MiB at most.
const maxLengthBound = 1 << 20

// ParseLengthRange reads an Exalead length range: "[30:]" is 30 or more,
// "[:10]" at most 10, "[11:12]" 11 or 12. Both bounds are inclusive; max is
// -1 when there is no upper bound.
func ParseLengthRange(s string) (lo, hi int, err error) {
	t := strings.TrimSpace(s)
	if len(t) < 3 || t[0] != '[' || t[len(t)-1] != ']' {
		return 0, 0, fmt.Errorf("length range %q must look like [30:], [:10] or [11:12]", s)
	}
	a, b, ok := strings.Cut(t[1:len(t)-1], ":")
	if !ok {
		return 0, 0, fmt.Errorf("length range %q needs a colon, as in [30:], [:10] or [11:12]", s)
	}
	bound := func(v string, def int) (int, error) {
		v = strings.TrimSpace(v)
		if v == "" {
			return def, nil
		}
		n, err := strconv.Atoi(v)
		if errors.Is(err, strconv.ErrRange) || err == nil && n > maxLengthBound {
			return 0, fmt.Errorf("length range %q: bound %s is past %d, longer than any URL", s, v, maxLengthBound)
		}
		if err != nil || n < 0 {
			return 0, fmt.Errorf("length range %q: bound %q is not a whole number >= 0", s, v)
		}
		return n, nil
	}
	if lo, err = bound(a, 0); err != nil {
		return 0, 0, err
	}
	if hi, err = bound(b, -1); err != nil {
		return 0, 0, err
	}
	if strings.TrimSpace(a) == "" && strings.TrimSpace(b) == "" {
		return 0, 0, fmt.Errorf("length range %q has no bound; give a minimum, a maximum or both", s)
	}
	if hi >= 0 && lo > hi {
		return 0, 0, fmt.Errorf("length range %q is empty: %d > %d", s, lo, hi)
	}
	return lo, hi, nil
}

// SplitMetaMapping splits a meta_mappings entry "metaname:extra_field" at
// its last colon, since metadata names may hold colons themselves
// ("og:title:extra_og_title", "article:section:extra_section").
func SplitMetaMapping(s string) (meta, field string, ok bool) {
	i := strings.LastIndexByte(s, ':')
	if i < 0 {
		return "", "", false
	}
	meta, field = strings.TrimSpace(s[:i]), strings.TrimSpace(s[i+1:])
	return meta, field, meta != "" && field != ""
}

// AddMetaField is the extra_ field an add_meta key fills: "section" and
// "extra_section" both name extra_section. After Load, add_meta keys are
// already in this full form.
func AddMetaField(key string) string {
	if strings.HasPrefix(key, "extra_") {
		return key
	}
	return "extra_" + key
}
