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
