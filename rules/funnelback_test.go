package rules

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// The seed's table: include_patterns=/red,/green,/blue and
// exclude_patterns=/green/olive.
func TestFunnelbackRedGreenBlueTableBehavesAsTheSeedSays(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/red/"]`,
		`include: [/red, /green, /blue]`,
		`exclude: [/green/olive]`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/orange", false, ReasonNotIncluded},   // fails include
		{"http://site.example/green/emerald", true, ReasonNone},    // passes include, passes exclude
		{"http://site.example/green/olive", false, ReasonExcluded}, // passes include, fails exclude
	})
	d := decide(t, s, "http://site.example/green/olive", 1)
	if d.Rule != "crawl.yaml:6:15 sources[0].exclude[0]" {
		t.Errorf("rule of /green/olive = %q", d.Rule)
	}
	if d := decide(t, s, "http://site.example/green/emerald", 1); d.Rule != "crawl.yaml:5:21 sources[0].include[1]" {
		t.Errorf("rule of /green/emerald = %q, want the include that let it in", d.Rule)
	}
}

func TestFunnelbackRegexpAlternationExcludesEachOfItsFivePatterns(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`stay_on_start_hosts: false`,
		`honored_query_params: ["*"]`,
		`exclude: ['regexp:search\?date=|^https:|\?OpenImageResource|/cgi-bin/|\.pdf$']`,
		`ignored_extensions: []`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/search?date=2018-11-08", false, ReasonExcluded},
		{"https://site.example/", false, ReasonExcluded},
		{"http://site.example/img?OpenImageResource", false, ReasonExcluded},
		{"http://site.example/cgi-bin/run", false, ReasonExcluded},
		{"http://site.example/report.pdf", false, ReasonExcluded},
		{"http://site.example/search?q=date", true, ReasonNone},
		{"http://site.example/report.pdf.html", true, ReasonNone},
		{"http://site.example/cgi-binary/", true, ReasonNone},
	})
}

func TestFunnelbackIncludeRegexpNeedsEscapedDots(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://www.anu.edu.au/"]`,
		`stay_on_start_hosts: false`,
		`include: ['regexp:\.anu\.edu\.au']`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://www.anu.edu.au/courses", true, ReasonNone},
		{"http://sub.anu.edu.au/", true, ReasonNone},
		{"http://www.anuxedu.au/", false, ReasonNotIncluded},
	})
}

func TestPatternsMatchTheURLWithoutItsFragment(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`exclude: [top, "#"]`,
	)).Source("site")
	checkTable(t, s, []want{{"http://site.example/page#top", true, ReasonNone}})
}

func TestSubstringAndRegexpEntriesMixInOneListFirstMatchReported(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`exclude: ["/a/", 'regexp:/b/\d+', "/b/"]`,
	)).Source("site")
	for u, rule := range map[string]string{
		"http://site.example/a/1": "sources[0].exclude[0]",
		"http://site.example/b/1": "sources[0].exclude[1]",
		"http://site.example/b/x": "sources[0].exclude[2]",
	} {
		d := decide(t, s, u, 1)
		if d.Reason != ReasonExcluded || !strings.HasSuffix(d.Rule, rule) {
			t.Errorf("%s: %q by %q, want excluded by %s", u, d.Reason, d.Rule, rule)
		}
	}
}

func TestPatternsWrittenWithSpacesOrAccentsMatchTheirNormalisedURL(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`exclude: ["/my docs/", "/café"]`,
	)).Source("site")
	checkTable(t, s, []want{
		{"http://site.example/my docs/a", false, ReasonExcluded},
		{"http://site.example/my%20docs/a", false, ReasonExcluded},
		{"http://site.example/caf%c3%a9", false, ReasonExcluded},
	})
}

func TestRegexpConstructsRE2LacksAreConfigErrorsNamingThem(t *testing.T) {
	for _, tc := range []struct{ expr, named string }{
		{`(a)\1`, `backreference \1`},
		{`/(?=private)`, "lookahead (?="},
		{`/(?!public)`, "negative lookahead (?!"},
		{`(?<=/)private`, "lookbehind (?<="},
		{`(?<!/)private`, "negative lookbehind (?<!"},
		{`a*+b`, "possessive quantifier *+"},
		{`a++`, "possessive quantifier ++"},
		{`(?>ab)`, "atomic group (?>"},
		{`(?P<x>a)(?P=x)`, "named backreference (?P=name)"},
		{`\k<x>`, `backreference \k`},
		{`end\Z`, `\Z`},
	} {
		errs := compileErrors(t, source(
			`start_urls: ["http://site.example/"]`,
			fmt.Sprintf(`exclude: ['regexp:%s']`, tc.expr),
		))
		if !errorsMention(errs, "sources[0].exclude[0]", tc.named, "RE2") {
			t.Errorf("%s: errors %v do not name %q", tc.expr, errs, tc.named)
		}
		if errs[0].Line != 5 || errs[0].Column != 15 {
			t.Errorf("%s: error at %d:%d, want 5:15", tc.expr, errs[0].Line, errs[0].Column)
		}
	}
	errs := compileErrors(t, source(
		`start_urls: ["http://site.example/"]`,
		`include: ['regexp:[a-']`,
	))
	if !errorsMention(errs, "sources[0].include[0]", "missing closing ]") {
		t.Errorf("plain syntax error not reported: %v", errs)
	}
}

func TestKillListsAreCrawledThroughButNeverIndexed(t *testing.T) {
	s := compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`kill_exact: ["http://SITE.example:80/"]`,
		`kill_patterns: [/landing/, 'regexp:/hub-\d+$']`,
	)).Source("site")
	for u, rule := range map[string]string{
		"http://site.example/":             "sources[0].kill_exact[0]",
		"http://site.example/landing/a":    "sources[0].kill_patterns[0]",
		"http://site.example/topics/hub-7": "sources[0].kill_patterns[1]",
	} {
		d := decide(t, s, u, 1)
		if !d.Crawl || !d.Follow || d.Index || d.Reason != ReasonKilled || !strings.HasSuffix(d.Rule, rule) {
			t.Errorf("%s: %+v; want crawled and followed, not indexed, killed by %s", u, d, rule)
		}
	}
	if d := decide(t, s, "http://site.example/page", 1); !d.Index || d.Reason != ReasonNone {
		t.Errorf("an unkilled page: %+v", d)
	}
}

func TestKilledStartURLIsNotAConfigError(t *testing.T) {
	compileYAML(t, source(
		`start_urls: ["http://site.example/"]`,
		`kill_exact: ["http://site.example/"]`,
	))
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func rejectConfig(dir string) string {
	return source(
		`start_urls: ["http://site.example/"]`,
		fmt.Sprintf(`reject_list: %q`, filepath.Join(dir, "reject.txt")),
	)
}

func TestRejectListExcludesAndReloadPicksUpEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reject.txt")
	writeFile(t, path, "# calendars\n/calendar/\n\nregexp:/tag/\\d+$\n")
	set := compileYAML(t, rejectConfig(dir))
	s := set.Source("site")
	d := decide(t, s, "http://site.example/calendar/2018", 1)
	if d.Reason != ReasonRejected || d.Rule != path+":2" {
		t.Errorf("calendar: %q by %q, want rejected by %s:2", d.Reason, d.Rule, path)
	}
	if d := decide(t, s, "http://site.example/tag/12", 1); d.Reason != ReasonRejected || d.Rule != path+":4" {
		t.Errorf("tag: %q by %q", d.Reason, d.Rule)
	}
	if changed, err := set.Reload(); changed || err != nil {
		t.Errorf("Reload of an unchanged file = %v, %v", changed, err)
	}
	// Same content, new time: no change.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil {
		t.Fatal(err)
	}
	if changed, err := s.Reload(); changed || err != nil {
		t.Errorf("Reload of a touched file = %v, %v", changed, err)
	}
	writeFile(t, path, "/archive/\n")
	if changed, err := s.Reload(); !changed || err != nil {
		t.Fatalf("Reload of an edited file = %v, %v", changed, err)
	}
	checkTable(t, s, []want{
		{"http://site.example/calendar/2018", true, ReasonNone},
		{"http://site.example/archive/1", false, ReasonRejected},
	})
	// A bad line keeps the previous list and says where.
	writeFile(t, path, "/archive/\nregexp:(?=x)\n")
	changed, err := s.Reload()
	if changed || err == nil || !strings.Contains(err.Error(), path+":2") || !strings.Contains(err.Error(), "lookahead") {
		t.Errorf("Reload of a bad file = %v, %v", changed, err)
	}
	checkTable(t, s, []want{{"http://site.example/archive/1", false, ReasonRejected}})
	// A removed file empties the list, with an error worth logging.
	os.Remove(path)
	if changed, err := s.Reload(); !changed || err == nil {
		t.Errorf("Reload of a removed file = %v, %v", changed, err)
	}
	checkTable(t, s, []want{{"http://site.example/archive/1", true, ReasonNone}})
	if changed, _ := s.Reload(); changed {
		t.Error("a file still missing reported a change")
	}
}

func TestMissingRejectListIsAWarningNotAnError(t *testing.T) {
	set := compileYAML(t, rejectConfig(t.TempDir()))
	if w := set.Warnings(); len(w) != 1 || !strings.Contains(w[0], "reject_list") {
		t.Errorf("warnings = %q", w)
	}
	checkTable(t, set.Source("site"), []want{{"http://site.example/x", true, ReasonNone}})
}

func TestBadRejectListAtStartIsPositionedInItsFile(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "reject.txt"), "ok\n\nregexp:(a)\\1\n")
	errs := compileErrors(t, rejectConfig(dir))
	if len(errs) != 1 || errs[0].File != filepath.Join(dir, "reject.txt") || errs[0].Line != 3 || !strings.Contains(errs[0].Msg, "backreference") {
		t.Errorf("errors = %v", errs)
	}
}

func TestRejectListReloadIsSafeWhileDeciding(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "reject.txt")
	writeFile(t, path, "/a/\n")
	s := compileYAML(t, rejectConfig(dir)).Source("site")
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 2 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				d := s.Decide("http://site.example/a/b", 1)
				if d.Reason != ReasonRejected && d.Reason != ReasonNone {
					t.Errorf("mid-reload decision %+v", d)
					return
				}
			}
		})
	}
	for i := range 20 {
		writeFile(t, path, fmt.Sprintf("/a/\n/b%d/\n", i))
		if _, err := s.Reload(); err != nil {
			t.Error(err)
		}
	}
	close(stop)
	wg.Wait()
}
