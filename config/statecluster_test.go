package config

import (
	"strings"
	"testing"
	"time"
)

func TestStateClusterIsTheDocumentsClusterUnlessClusterElasticsearchNamesAnother(t *testing.T) {
	same, err := Parse("c.yaml", []byte("elasticsearch: {addresses: [\"http://10.0.0.1:9200\"], shards: 3}\ncluster: {state_index: st}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if got := same.StateCluster(); got != same.Elasticsearch {
		t.Errorf("without cluster.elasticsearch the state's cluster is %+v, want the documents' %+v", got, same.Elasticsearch)
	}
	other, err := Parse("c.yaml", []byte("elasticsearch: {addresses: [\"http://10.0.0.1:9200\"], shards: 3}\n"+
		"cluster: {state_index: st, elasticsearch: {addresses: [\"https://10.0.0.2:9200\"], api_key: k}}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	st := other.StateCluster()
	if st.Addresses[0] != "https://10.0.0.2:9200" || st.APIKey != "k" {
		t.Errorf("state's cluster %v (api key %q), want cluster.elasticsearch's", st.Addresses, st.APIKey)
	}
	// Its own defaults, not the documents' values.
	if st.Shards != 1 || st.Replicas == nil || *st.Replicas != 1 || st.RequestTimeout.D() != 90*time.Second {
		t.Errorf("state's cluster shards %d, replicas %v, request_timeout %s: want the defaults 1, 1, 90s", st.Shards, st.Replicas, st.RequestTimeout.D())
	}
	if other.Elasticsearch.Addresses[0] != "http://10.0.0.1:9200" {
		t.Errorf("the documents' cluster became %v", other.Elasticsearch.Addresses)
	}
	// The state in Elasticsearch, the documents in a file.
	fileSink, err := Parse("c.yaml", []byte("cluster: {state_index: st, elasticsearch: {}}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if fileSink.Elasticsearch != nil || fileSink.StateCluster().Addresses[0] != DefaultESAddress {
		t.Errorf("with the file sink the state's cluster is %+v, want the default address", fileSink.StateCluster())
	}
}

func TestStateClusterKeysAreCheckedAsTheDocumentsClustersAtTheirPosition(t *testing.T) {
	const secret = "Sup3rS3cret"
	runErrCases(t, []errCase{
		{"credentials in an address", "cluster:\n  state_index: st\n  elasticsearch:\n    addresses: [\"https://elastic:" + secret + "@es.example.org:9243\"]\n" + minimal, []string{
			`c.yaml:4:17: cluster.elasticsearch.addresses[0]: must not carry credentials; use cluster.elasticsearch.username and cluster.elasticsearch.password (or cluster.elasticsearch.api_key)`,
		}},
		{"not a URL", "cluster: {state_index: st, elasticsearch: {addresses: [es-state]}}\n" + minimal, []string{
			`c.yaml:1:56: cluster.elasticsearch.addresses[0]: must be an absolute http:// or https:// URL with a host, such as http://127.0.0.1:9200`,
		}},
		{"username without password", "cluster: {state_index: st, elasticsearch: {username: u}}\n" + minimal, []string{
			`c.yaml:1:54: cluster.elasticsearch.username: password is required with username`,
		}},
		{"api key and password", "cluster: {state_index: st, elasticsearch: {username: u, password: p, api_key: k}}\n" + minimal, []string{
			`c.yaml:1:79: cluster.elasticsearch.api_key: use either api_key or username and password, not both`,
		}},
		{"unreadable CA", "cluster: {state_index: st, elasticsearch: {ca_file: /nonexistent/ca.pem}}\n" + minimal, []string{
			`c.yaml:1:53: cluster.elasticsearch.ca_file: cannot read /nonexistent/ca.pem: no such file or directory`,
		}},
		{"without state_index", "elasticsearch: {}\ncluster: {elasticsearch: {}}\n" + minimal, []string{
			`c.yaml:2:26: cluster.elasticsearch: needs cluster.state_index: without it the state is in state_dir`,
		}},
	})
	bad := errs(t, "cluster:\n  state_index: st\n  elasticsearch:\n    addresses: [\"https://elastic:"+secret+"@es.example.org:9243\"]\n    username: u\n"+minimal)
	for _, e := range bad {
		if strings.Contains(e, secret) {
			t.Errorf("error repeats the password: %s", e)
		}
	}
	// index is not a key of the state's connection: refused where it is written.
	got := errs(t, "cluster: {state_index: st, elasticsearch: {index: web}}\n"+minimal)
	if len(got) != 1 || !strings.HasPrefix(got[0], "c.yaml:1:44: cluster.elasticsearch.index") {
		t.Errorf("errors %q, want one at 1:44 on cluster.elasticsearch.index", got)
	}
}
