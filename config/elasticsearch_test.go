package config

import (
	"strings"
	"testing"
	"time"
)

func TestElasticsearchAddressWithCredentialsIsRefusedWithoutEchoingThem(t *testing.T) {
	const secret = "Sup3rS3cret"
	yaml := "elasticsearch:\n  addresses: [\"http://127.0.0.1:9200\", \"https://elastic:" + secret + "@es.example.org:9243\"]\n" + minimal
	runErrCases(t, []errCase{{"user info in an address", yaml, []string{
		`c.yaml:2:40: elasticsearch.addresses[1]: must not carry credentials; use elasticsearch.username and elasticsearch.password (or elasticsearch.api_key)`,
	}}})
	for _, e := range errs(t, yaml) {
		if strings.Contains(e, secret) || strings.Contains(e, "es.example.org") {
			t.Errorf("error repeats the address: %s", e)
		}
	}
}

func TestElasticsearchRequestTimeoutHasADefaultAndBounds(t *testing.T) {
	runErrCases(t, []errCase{
		{"too short", "elasticsearch: {request_timeout: 500ms}\n" + minimal, []string{
			`c.yaml:1:34: elasticsearch.request_timeout: must be between 1s and 10m, got 500ms`,
		}},
		{"too long", "elasticsearch: {request_timeout: 2h}\n" + minimal, []string{
			`c.yaml:1:34: elasticsearch.request_timeout: must be between 1s and 10m, got 2h`,
		}},
	})
	c, err := Parse("c.yaml", []byte("elasticsearch: {}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Elasticsearch.RequestTimeout.D(); got != 90*time.Second {
		t.Errorf("default request_timeout %s, want 90s", got)
	}
}

func TestElasticsearchIndexOptionsAreCheckedWhereWritten(t *testing.T) {
	runErrCases(t, []errCase{
		{"empty pipeline", "elasticsearch: {pipeline: \"\"}\n" + minimal, []string{
			`c.yaml:1:27: elasticsearch.pipeline: must not be empty`,
		}},
		{"refresh interval too short", "elasticsearch: {refresh_interval: 10ms}\n" + minimal, []string{
			`c.yaml:1:35: elasticsearch.refresh_interval: must be between 100ms and 1h, got 10ms`,
		}},
		{"unknown analysis section", "elasticsearch:\n  analysis:\n    analyser: {folded: {type: custom}}\n" + minimal, []string{
			`c.yaml:3:5: elasticsearch.analysis.analyser: "analyser" is not a part of index analysis; use analyzer, char_filter, filter, normalizer, tokenizer`,
		}},
		{"definition not a mapping", "elasticsearch:\n  analysis:\n    analyzer: {folded: custom}\n" + minimal, []string{
			`c.yaml:3:16: elasticsearch.analysis.analyzer.folded: must be a mapping such as {type: custom, tokenizer: standard, filter: [lowercase]}`,
		}},
		{"analyzer on a keyword field", "elasticsearch:\n  analyzers: {doc_url: standard}\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.analyzers.doc_url: doc_url is not a text field; analyzers apply to doc_title, doc_description, doc_headings, doc_body and extra fields of type text`,
		}},
		{"analyzer not defined", "elasticsearch:\n  analyzers: {doc_body: folded}\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.analyzers.doc_body: analyzer "folded" is not defined in elasticsearch.analysis.analyzer nor built in (standard, simple, whitespace, stop, keyword)`,
		}},
		{"subfield of no field", "elasticsearch:\n  subfields: {doc_nope: {x: {type: text}}}\n" + minimal, []string{
			`c.yaml:2:15: elasticsearch.subfields.doc_nope: doc_nope is not a doc_ field nor declared in extra_fields`,
		}},
		{"subfield taking a builtin name", "elasticsearch:\n  subfields: {doc_title: {keyword: {type: keyword}}}\n" + minimal, []string{
			`c.yaml:2:27: elasticsearch.subfields.doc_title.keyword: doc_title.keyword is crawlspace's own sub-field; choose another name`,
		}},
		{"subfield without a type", "elasticsearch:\n  subfields: {doc_title: {folded: {analyzer: standard}}}\n" + minimal, []string{
			`c.yaml:2:27: elasticsearch.subfields.doc_title.folded: must give a type, such as {type: text, analyzer: folded}`,
		}},
		{"custom tag inside analysis", "elasticsearch:\n  analysis:\n    analyzer: {folded: {type: !env X}}\n" + minimal, []string{
			`c.yaml:3:31: elasticsearch.analysis.analyzer.folded.type: YAML tag !env is not supported here`,
		}},
	})
}

func TestElasticsearchIndexOptionsNameTheIndexOnlyWhenSet(t *testing.T) {
	c, err := Parse("c.yaml", []byte("elasticsearch: {refresh_interval: 30s, analysis: {analyzer: {folded: {type: custom, tokenizer: standard, filter: [lowercase]}}}, analyzers: {doc_body: folded}}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	o := c.Elasticsearch.IndexOptions()
	if o.RefreshInterval != "30000ms" || o.Analyzers["doc_body"] != "folded" {
		t.Errorf("index options %+v", o)
	}
	plain, err := Parse("c.yaml", []byte("elasticsearch: {}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if o := plain.Elasticsearch.IndexOptions(); o.RefreshInterval != "" || o.Analysis != nil || o.Analyzers != nil || o.Subfields != nil {
		t.Errorf("index options of a config setting none: %+v", o)
	}
}
