package urlnorm

import (
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/internal/conformance"
)

// urlCase is one test of the WHATWG URL Standard's urltestdata.json.
type urlCase struct {
	Input   string  `json:"input"`
	Base    *string `json:"base"`
	Href    string  `json:"href"`
	Failure bool    `json:"failure"`
}

// c0Space is what the URL Standard strips from both ends of a URL.
const c0Space = "\x00\x01\x02\x03\x04\x05\x06\x07\x08\t\n\v\f\r\x0e\x0f\x10\x11\x12\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f "

// schemeIs reports whether a URL (leading C0 controls and spaces aside)
// starts with one of the schemes.
func schemeIs(s string, schemes ...string) bool {
	s = strings.ToLower(strings.TrimLeft(s, c0Space))
	for _, sc := range schemes {
		if strings.HasPrefix(s, sc+":") {
			return true
		}
	}
	return false
}

// The standard's own tests, every one with an http or https base or
// input, through the resolution the crawler uses: Base for the links of
// a page (<a href>, a sitemap's or feed's entries), Resolve for a
// redirect's Location, Found for an absolute URL (a start URL, explain).
// A browser's href and ours are compared after the spelling steps of the
// package comment are applied to the browser's (Found(href)): those steps
// come after resolution, and are the only difference allowed. Besides
// them, two differences are on purpose and checked as such:
//
//   - a link to the page itself ("" or "#frag") is not a link: Base gives
//     none, where Resolve gives the page;
//   - a URL of another scheme (mailto:, ws:, a scheme of its own) is no
//     web page: Base gives none, Resolve either an error or that URL,
//     which the crawl-space rules refuse (schemes).
//
// Cases whose difference is deliberate are listed in differences, each
// with its reason; every other case must pass.
func TestWHATWGURLConformance(t *testing.T) {
	data, err := os.ReadFile(conformance.Path(t, "urltestdata.json"))
	if err != nil {
		t.Fatal(err)
	}
	var raw []json.RawMessage
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	ran, failed := 0, 0
	for _, r := range raw {
		var c urlCase
		if json.Unmarshal(r, &c) != nil || (c.Href == "" && !c.Failure) {
			continue // a comment
		}
		if (c.Base == nil || !schemeIs(*c.Base, "http", "https")) && !schemeIs(c.Input, "http", "https") {
			continue
		}
		ran++
		problems := conforms(c)
		why, listed := differences[c.Input]
		switch {
		case listed && problems == nil:
			t.Errorf("%q conforms now: take it off the list (%s)", c.Input, why)
		case listed:
			t.Logf("differs on purpose: %q: %s", c.Input, why)
		case problems != nil:
			failed++
			for _, p := range problems {
				t.Error(p)
			}
		}
	}
	t.Logf("%d cases with an http or https base or input, %d differ", ran, failed)
	if ran < 400 {
		t.Errorf("only %d cases ran: is urltestdata.json whole?", ran)
	}
}

// differences are the inputs crawlspace reads otherwise on purpose, with
// the reason.
var differences = map[string]string{
	"http://!\"$&'()*+,-.;=_`{}~/": "a host holding \"`\", \"{\" or \"}\" is refused: the standard allows them, " +
		"but Go's net/url, through which every request goes, cannot read such a host, so the URL could never be requested",
}

// conforms checks one case, saying how it differs.
func conforms(c urlCase) (problems []string) {
	fail := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	want, wantOK := "", false
	if !c.Failure && schemeIs(c.Href, "http", "https", "ws", "wss", "ftp") {
		var err error
		if want, err = Found(c.Href); err != nil {
			fail("href %q of input %q: %v", c.Href, c.Input, err)
			return problems
		}
		wantOK = true
	}
	web := wantOK && schemeIs(c.Href, "http", "https")
	if c.Base == nil {
		if got, err := Found(c.Input); got != want || (err == nil) != wantOK {
			fail("Found(%q) = %q, %v; want %q (href %q)", c.Input, got, err, want, c.Href)
		}
		return problems
	}
	base := *c.Base
	// A redirect's Location.
	got, err := Resolve(base, c.Input)
	switch {
	case wantOK && (got != want || err != nil):
		fail("Resolve(%q, %q) = %q, %v; want %q (href %q)", base, c.Input, got, err, want, c.Href)
	case !wantOK && err == nil && (c.Failure || schemeIs(got, "http", "https")):
		fail("Resolve(%q, %q) = %q; want an error (href %q, failure %v)", base, c.Input, got, c.Href, c.Failure)
	}
	// A page's link.
	self := strings.HasPrefix(strings.Trim(c.Input, c0Space)+"#", "#")
	pb, _ := ParseBase(base)
	link, linkOK := pb.Resolve(c.Input)
	switch {
	case self && linkOK:
		fail("Base(%q).Resolve(%q) = %q: a link to the page itself", base, c.Input, link)
	case !self && web && (link != want || !linkOK):
		fail("Base(%q).Resolve(%q) = %q, %v; want %q (href %q)", base, c.Input, link, linkOK, want, c.Href)
	case !self && !web && linkOK:
		fail("Base(%q).Resolve(%q) = %q; want no link (href %q, failure %v)", base, c.Input, link, c.Href, c.Failure)
	}
	return problems
}
