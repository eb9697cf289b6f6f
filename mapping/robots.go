package mapping

import (
	"strings"
)

// Directives are the robots directives that apply to a page, merged from
// <meta name="robots">, <meta name="crawlspace"> (and the configured user
// agent's product token) and the X-Robots-Tag header. The most restrictive
// wins: "index" or "all" never undo a "noindex" found elsewhere.
type Directives struct {
	NoIndex   bool `json:"noindex,omitempty"`
	NoFollow  bool `json:"nofollow,omitempty"`
	NoSnippet bool `json:"nosnippet,omitempty"`
	NoArchive bool `json:"noarchive,omitempty"`
}

// apply sets the directive named by one token, compared case-insensitively.
// Unknown tokens are ignored, as the robots meta convention asks.
func (d *Directives) apply(tok string) {
	switch {
	case strings.EqualFold(tok, "noindex"):
		d.NoIndex = true
	case strings.EqualFold(tok, "nofollow"):
		d.NoFollow = true
	case strings.EqualFold(tok, "none"):
		d.NoIndex, d.NoFollow = true, true
	case strings.EqualFold(tok, "nosnippet"):
		d.NoSnippet = true
	case strings.EqualFold(tok, "noarchive"), strings.EqualFold(tok, "nocache"):
		d.NoArchive = true
	}
}

// applyValue handles a "name: value" directive; max-snippet:0 forbids
// snippets just as nosnippet does.
func (d *Directives) applyValue(name, value string) {
	if strings.EqualFold(name, "max-snippet") && strings.TrimSpace(value) == "0" {
		d.NoSnippet = true
	}
}

// valueDirective reports whether name is a robots directive that takes a
// value after a colon, as opposed to a user agent prefix.
func valueDirective(name string) bool {
	for _, v := range [...]string{"max-snippet", "max-image-preview", "max-video-preview", "unavailable_after", "indexifembedded"} {
		if strings.EqualFold(name, v) {
			return true
		}
	}
	return false
}

// parseMetaRobots merges the content of a robots meta tag: directives
// separated by commas or whitespace.
func (d *Directives) parseMetaRobots(content string) {
	for part := range strings.SplitSeq(content, ",") {
		name, value, hasColon := strings.Cut(part, ":")
		if hasColon {
			d.applyValue(strings.TrimSpace(name), value)
			continue
		}
		for tok := range strings.FieldsSeq(part) {
			d.apply(tok)
		}
	}
}

// parseXRobotsTag merges one X-Robots-Tag header value. A value may name
// the user agent it is for ("googlebot: noindex"); only unprefixed
// directives and those for one of agents (lower-case product tokens) apply.
// Header lines folded into one ("a: noindex, b: nofollow") are read as
// successive groups: a prefix holds until the next one.
func (d *Directives) parseXRobotsTag(value string, agents []string) {
	ours := true // unprefixed directives apply to everyone
	skipValue := false
	for part := range strings.SplitSeq(value, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if name, rest, ok := strings.Cut(part, ":"); ok && !strings.ContainsAny(strings.TrimSpace(name), " \t") {
			name = strings.TrimSpace(name)
			if valueDirective(name) {
				if ours {
					d.applyValue(name, rest)
				}
				// unavailable_after's date may hold commas of its own.
				skipValue = strings.EqualFold(name, "unavailable_after")
				continue
			}
			ours = false
			for _, a := range agents {
				if strings.EqualFold(name, a) {
					ours = true
				}
			}
			skipValue = false
			part = rest
		} else if skipValue {
			// A comma inside unavailable_after's date ("Sat, 01 Jan ...")
			// splits it; the pieces are no directives.
			if !looksLikeDirectives(part) {
				continue
			}
			skipValue = false
		}
		if !ours {
			continue
		}
		for tok := range strings.FieldsSeq(part) {
			d.apply(tok)
		}
	}
}

// looksLikeDirectives reports whether every word of s is a known robots
// directive.
func looksLikeDirectives(s string) bool {
	for tok := range strings.FieldsSeq(s) {
		var probe Directives
		probe.apply(tok)
		if probe == (Directives{}) && !strings.EqualFold(tok, "index") && !strings.EqualFold(tok, "follow") && !strings.EqualFold(tok, "all") {
			return false
		}
	}
	return true
}
