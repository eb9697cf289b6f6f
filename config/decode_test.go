package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// minimal is the smallest valid config; tests append to or replace it.
const minimal = `sources:
  - name: a
    start_urls: [http://example.com/]
`

// errs parses src as c.yaml and returns its errors as strings, or nil.
func errs(t *testing.T, src string) []string {
	t.Helper()
	c, err := Parse("c.yaml", []byte(src))
	if err == nil {
		if c == nil {
			t.Fatal("Parse returned neither a config nor an error")
		}
		return nil
	}
	if c != nil {
		t.Error("Parse returned a config along with errors")
	}
	var es Errors
	if !errors.As(err, &es) {
		t.Fatalf("error is %T, not config.Errors: %v", err, err)
	}
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.Error()
	}
	return out
}

type errCase struct {
	name string
	src  string
	want []string
}

func runErrCases(t *testing.T, cases []errCase) {
	t.Helper()
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := errs(t, tc.src)
			if !slices.Equal(got, tc.want) {
				t.Errorf("errors:\n got: %s\nwant: %s", strings.Join(got, "\n      "), strings.Join(tc.want, "\n      "))
			}
		})
	}
}

func TestUnknownKeysAreRejectedAtTheirPositionAtEveryLevel(t *testing.T) {
	runErrCases(t, []errCase{
		{"top level with a close spelling", "fetchh:\n  concurrency: 2\n" + minimal, []string{
			`c.yaml:1:1: fetchh: unknown key; did you mean "fetch"?`,
		}},
		{"top level with nothing close", "colour: blue\n" + minimal, []string{
			`c.yaml:1:1: colour: unknown key`,
		}},
		{"top level key that belongs in a source", "start_urls: [http://x/]\n" + minimal, []string{
			`c.yaml:1:1: start_urls: unknown key; did you mean "start_urls" under "sources"?`,
		}},
		{"source level", minimal + "    politness: {delay: 1s}\n", []string{
			`c.yaml:4:5: sources[0].politness: unknown key; did you mean "politeness"?`,
		}},
		{"source level key that belongs in a nested block", minimal + "    delay: 1s\n", []string{
			`c.yaml:4:5: sources[0].delay: unknown key; did you mean "delay" under "politeness"?`,
		}},
		{"nested politeness", minimal + "    politeness: {delay: 1s, max_paralel_per_host: 2}\n", []string{
			`c.yaml:4:29: sources[0].politeness.max_paralel_per_host: unknown key; did you mean "max_parallel_per_host"?`,
		}},
		{"crawl rule match, without a derived empty-match error", minimal + "    crawl_rules:\n      - match: {domian: example.com}\n        index: true\n", []string{
			`c.yaml:5:17: sources[0].crawl_rules[0].match.domian: unknown key; did you mean "domain"?`,
		}},
		{"deep in a match tree", minimal + "    crawl_rules:\n      - match:\n          and:\n            - not: {pth: /x}\n        follow: false\n", []string{
			`c.yaml:7:21: sources[0].crawl_rules[0].match.and[0].not.pth: unknown key; did you mean "path"?`,
		}},
		{"crawl rule action, without a derived no-action error", minimal + "    crawl_rules:\n      - match: {path: /x}\n        idnex: false\n", []string{
			`c.yaml:6:9: sources[0].crawl_rules[0].idnex: unknown key; did you mean "index"?`,
		}},
		{"capitalised key", "sources:\n  - Name: a\n    start_urls: [http://example.com/]\n", []string{
			`c.yaml:2:5: sources[0].Name: unknown key; did you mean "name"? (keys are lower-case)`,
		}},
		{"elasticsearch block", "elasticsearch: {adresses: [http://127.0.0.1:9200]}\n" + minimal, []string{
			`c.yaml:1:17: elasticsearch.adresses: unknown key; did you mean "addresses"?`,
		}},
		{"atom", minimal + "    crawl_rules:\n      - match: {atom: {field: path, kind: prefix, val: /x}}\n        index: false\n", []string{
			`c.yaml:5:51: sources[0].crawl_rules[0].match.atom.val: unknown key; did you mean "value"?`,
		}},
	})
}

func TestTypeErrorsArePositionedAtTheValue(t *testing.T) {
	runErrCases(t, []errCase{
		{"string where an integer is expected", minimal + "    max_link_depth: ten\n", []string{
			`c.yaml:4:21: sources[0].max_link_depth: expected an integer, got "ten"`,
		}},
		{"float where an integer is expected", minimal + "    max_link_depth: 2.5\n", []string{
			`c.yaml:4:21: sources[0].max_link_depth: expected an integer, got 2.5`,
		}},
		{"integer out of range", "elasticsearch: {shards: 99999999999999999999}\n" + minimal, []string{
			`c.yaml:1:25: elasticsearch.shards: must be between 1 and 1024, got 99999999999999999999`,
		}},
		{"mapping where a list is expected", "sources:\n  name: a\n", []string{
			`c.yaml:2:3: sources: expected a list, got a mapping`,
		}},
		{"string where a list is expected, with a hint", "sources:\n  - name: a\n    start_urls: http://example.com/\n", []string{
			`c.yaml:3:17: sources[0].start_urls: expected a list, got "http://example.com/"; a list of one is written [http://example.com/]`,
		}},
		{"list where a string is expected", "sources:\n  - name: [a, b]\n    start_urls: [http://example.com/]\n", []string{
			`c.yaml:2:11: sources[0].name: expected a string, got a list`,
		}},
		{"list where a mapping is expected", minimal + "    politeness: [1s]\n", []string{
			`c.yaml:4:17: sources[0].politeness: expected a mapping, got a list`,
		}},
		{"scalar where a mapping is expected", "log: debug\n" + minimal, []string{
			`c.yaml:1:6: log: expected a mapping, got "debug"`,
		}},
		{"YAML 1.1 boolean", minimal + "    discovery: yes\n", []string{
			`c.yaml:4:16: sources[0].discovery: expected true or false, got "yes" (YAML 1.1 spellings are not booleans here)`,
		}},
		{"number where a boolean is expected", minimal + "    discovery: 1\n", []string{
			`c.yaml:4:16: sources[0].discovery: expected true or false, got 1`,
		}},
		{"duration without a unit", minimal + "    max_age: 90\n", []string{
			`c.yaml:4:14: sources[0].max_age: 90 has no unit, which is ambiguous: write 90s, 90ms or 90m`,
		}},
		{"malformed duration", minimal + "    max_age: 2 days\n", []string{
			`c.yaml:4:14: sources[0].max_age: invalid duration "2 days": write a Go duration such as 500ms, 90s or 1h30m`,
		}},
		{"duration as a list", minimal + "    max_age: [1h]\n", []string{
			`c.yaml:4:14: sources[0].max_age: expected a duration such as 90s or 1h30m, got a list`,
		}},
		{"byte size with an unknown unit", "fetch: {max_body_bytes: 10 megs}\n" + minimal, []string{
			`c.yaml:1:25: fetch.max_body_bytes: invalid size "10 megs": the unit must be one of B, KB, KiB, MB, MiB, GB, GiB`,
		}},
		{"byte size unit only where bytes are meant", minimal + "    max_url_length: 2KiB\n", []string{
			`c.yaml:4:21: sources[0].max_url_length: expected an integer, got "2KiB"`,
		}},
		{"non-string key", "sources:\n  - name: a\n    start_urls: [http://example.com/]\n    headers: {[a]: b}\n", []string{
			`c.yaml:4:15: sources[0].headers: a key must be a plain string, got a list`,
		}},
		{"custom YAML tag", "state_dir: !env HOME\n" + minimal, []string{
			`c.yaml:1:12: state_dir: YAML tag !env is not supported here`,
		}},
		{"binary YAML tag", "state_dir: !!binary aGVsbG8=\n" + minimal, []string{
			`c.yaml:1:12: state_dir: YAML tag !!binary is not supported here`,
		}},
		{"errors are reported together, in file order", "sources:\n  - name: a\n    start_urls: [http://example.com/]\n    max_age: 5\nfetch: {concurrency: x}\nlog: {format: xml}\n", []string{
			`c.yaml:4:14: sources[0].max_age: 5 has no unit, which is ambiguous: write 5s, 5ms or 5m`,
			`c.yaml:5:22: fetch.concurrency: expected an integer, got "x"`,
			`c.yaml:6:15: log.format: "xml" is not one of text, json`,
		}},
	})
}

func TestDuplicateKeysAreErrors(t *testing.T) {
	runErrCases(t, []errCase{
		{"top level", "state_dir: a\nstate_dir: b\n" + minimal, []string{
			`c.yaml:2:1: state_dir: duplicate key; first written at line 1`,
		}},
		{"in a source", "sources:\n  - name: a\n    start_urls: [http://example.com/]\n    name: b\n", []string{
			`c.yaml:4:5: sources[0].name: duplicate key; first written at line 2`,
		}},
		{"in a map value", minimal + "    headers:\n      X-Token: a\n      X-Token: b\n", []string{
			`c.yaml:6:7: sources[0].headers.X-Token: duplicate key; first written at line 5`,
		}},
		{"in a flow mapping", minimal + "    politeness: {delay: 1s, delay: 2s}\n", []string{
			`c.yaml:4:29: sources[0].politeness.delay: duplicate key; first written at line 4`,
		}},
	})
}

func TestFileLevelProblems(t *testing.T) {
	runErrCases(t, []errCase{
		{"empty file", "", []string{`c.yaml: the file is empty: it needs at least a sources list`}},
		{"only comments", "# nothing yet\n\n", []string{`c.yaml: the file is empty: it needs at least a sources list`}},
		{"only a document marker", "---\n", []string{`c.yaml: the file is empty: it needs at least a sources list`}},
		{"top level is a list", "- a\n- b\n", []string{`c.yaml:1:1: expected a mapping of settings (key: value lines), got a list`}},
		{"top level is a string", "hello\n", []string{`c.yaml:1:1: expected a mapping of settings (key: value lines), got "hello"`}},
		{"two documents", minimal + "---\nstate_dir: x\n", []string{`c.yaml:4:1: a second YAML document; a configuration file holds exactly one`}},
		{"syntax error keeps yaml's line", "sources:\n  - name: a\n   start_urls: [x]\n", []string{
			`c.yaml:3: YAML syntax: did not find expected '-' indicator (yaml points at line 1)`,
		}},
		{"tab indentation", "sources:\n\t- name: a\n", []string{
			`c.yaml:2: YAML syntax: found character that cannot start any token`,
		}},
		{"unclosed flow list", "sources: [\n", []string{
			`c.yaml:1: YAML syntax: did not find expected node content`,
		}},
		{"unknown anchor", "sources: *nothing\n", []string{
			`c.yaml:1: YAML syntax: unknown anchor 'nothing' referenced`,
		}},
	})
}

func TestLoadReportsAnUnreadableFile(t *testing.T) {
	_, err := Load("testdata/does-not-exist.yaml")
	if err == nil || err.Error() != "testdata/does-not-exist.yaml: cannot read: no such file or directory" {
		t.Errorf("err = %v", err)
	}
}

func TestErrorFormatting(t *testing.T) {
	for _, tc := range []struct {
		e    Error
		want string
	}{
		{Error{File: "f.yaml", Line: 3, Column: 7, Path: "a.b", Msg: "bad"}, "f.yaml:3:7: a.b: bad"},
		{Error{File: "f.yaml", Line: 3, Msg: "syntax"}, "f.yaml:3: syntax"},
		{Error{File: "f.yaml", Path: "sources", Msg: "missing"}, "f.yaml: sources: missing"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestAnchorsMergeKeysAndXKeysLetSourcesShareSettings(t *testing.T) {
	c, err := Parse("c.yaml", []byte(`x-common: &common
  max_age: 12h
  politeness: {delay: 1s}
  exclude: [/private/]
sources:
  - <<: *common
    name: a
    start_urls: [http://a.example/]
  - <<: *common
    name: b
    start_urls: [http://b.example/]
    max_age: 1h
    include: &inc [/docs/]
  - name: c
    start_urls: [http://c.example/]
    include: *inc
`))
	if err != nil {
		t.Fatal(err)
	}
	a, b, cc := c.Sources[0], c.Sources[1], c.Sources[2]
	if a.MaxAge.D().String() != "12h0m0s" || b.MaxAge.D().String() != "1h0m0s" {
		t.Errorf("max_age a=%v b=%v: a merged value and an override", a.MaxAge.D(), b.MaxAge.D())
	}
	if a.Politeness.Delay.D().String() != "1s" || !slices.Equal(b.Exclude, []string{"/private/"}) {
		t.Errorf("merged politeness %v, exclude %v", a.Politeness.Delay.D(), b.Exclude)
	}
	if !slices.Equal(cc.Include, []string{"/docs/"}) {
		t.Errorf("alias include = %v", cc.Include)
	}
	// A merged value's position is where it was written: in the x- block.
	if got := c.Pos("sources[0].max_age"); got != (Position{2, 12}) {
		t.Errorf("Pos of merged max_age = %v", got)
	}
}

func TestAliasesCannotExplode(t *testing.T) {
	// Eight levels of nine-fold aliases: 43 million match nodes if expanded.
	var b strings.Builder
	b.WriteString("x-m0: &m0 {path: /x}\n")
	for i := 1; i <= 8; i++ {
		alias := fmt.Sprintf("*m%d", i-1)
		fmt.Fprintf(&b, "x-m%d: &m%d {or: [%s%s]}\n", i, i, strings.Repeat(alias+", ", 8), alias)
	}
	b.WriteString(minimal + "    crawl_rules:\n      - match: *m8\n        index: false\n")
	got := errs(t, b.String())
	if len(got) != 1 || !strings.Contains(got[0], "expands to more than") {
		t.Errorf("errors = %q, want one about expansion", got)
	}
}

func TestSelfReferentialMergeIsAnError(t *testing.T) {
	got := errs(t, "sources:\n  - &s\n    name: a\n    start_urls: [http://example.com/]\n    politeness: {<<: *s}\n")
	if len(got) == 0 {
		t.Fatal("a mapping merging itself was accepted")
	}
}
