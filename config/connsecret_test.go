package config

import (
	"os"
	"path/filepath"
	"testing"
)

// A Kubernetes Secret reaches crawlspace as an environment variable or a
// mounted file: the Elasticsearch credentials of both connections are
// read from either, as a source's are.
func TestElasticsearchCredentialsAreReadFromTheEnvironmentAndFilesRelativeToTheConfig(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "es-password"), []byte("password-from-a-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "state-key"), []byte("key-from-a-file"), 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("CRAWLSPACE_TEST_ES_KEY", "key-from-the-environment")
	t.Setenv("CRAWLSPACE_TEST_STATE_PASSWORD", "state-password-from-the-environment")
	for _, tc := range []struct {
		name, yaml             string
		password, apiKey       string
		statePass, stateAPIKey string
	}{
		{"password_file and, for the state, api_key_file",
			"elasticsearch: {username: u, password_file: es-password}\ncluster: {state_index: st, elasticsearch: {api_key_file: state-key}}\n",
			"password-from-a-file", "", "", "key-from-a-file"},
		{"api_key_env and, for the state, password_env",
			"elasticsearch: {api_key_env: CRAWLSPACE_TEST_ES_KEY}\ncluster: {state_index: st, elasticsearch: {username: u, password_env: CRAWLSPACE_TEST_STATE_PASSWORD}}\n",
			"", "key-from-the-environment", "state-password-from-the-environment", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, "c.yaml")
			if err := os.WriteFile(path, []byte(tc.yaml+minimal), 0o600); err != nil {
				t.Fatal(err)
			}
			c, err := Load(path)
			if err != nil {
				t.Fatal(err)
			}
			if es := c.Elasticsearch; es.Password != tc.password || es.APIKey != tc.apiKey {
				t.Errorf("elasticsearch: password %q, api_key %q; want %q, %q", es.Password, es.APIKey, tc.password, tc.apiKey)
			}
			// What the state store connects with, not only what was decoded.
			if st := c.StateCluster(); st.Password != tc.statePass || st.APIKey != tc.stateAPIKey {
				t.Errorf("the state's connection: password %q, api_key %q; want %q, %q", st.Password, st.APIKey, tc.statePass, tc.stateAPIKey)
			}
		})
	}
}

// The forms are checked as a source's secrets are; that no error quotes
// one is TestSecretsFromTheEnvironmentOrFilesAreNeverEchoedInErrors's.
func TestElasticsearchCredentialFormsAreCheckedAtTheirPlace(t *testing.T) {
	t.Setenv("CRAWLSPACE_TEST_ES_SECRET", "Sup3rS3cret-es")
	t.Setenv("CRAWLSPACE_TEST_EMPTY", "")
	runErrCases(t, []errCase{
		{"two forms of the password", "elasticsearch: {username: u, password: p, password_env: CRAWLSPACE_TEST_ES_SECRET}\n" + minimal, []string{
			`c.yaml:1:40: elasticsearch.password: give one of password, password_env and password_file`,
		}},
		{"an API key beside a password read from the environment", "elasticsearch: {username: u, password_env: CRAWLSPACE_TEST_ES_SECRET, api_key: k}\n" + minimal, []string{
			`c.yaml:1:80: elasticsearch.api_key: use either api_key or username and password, not both`,
		}},
		{"a password from the environment without a username", "elasticsearch: {password_env: CRAWLSPACE_TEST_ES_SECRET}\n" + minimal, []string{
			`c.yaml:1:31: elasticsearch.password_env: username is required with password`,
		}},
		{"a variable not set", "elasticsearch: {api_key_env: CRAWLSPACE_TEST_UNSET_VARIABLE}\n" + minimal, []string{
			`c.yaml:1:30: elasticsearch.api_key_env: environment variable CRAWLSPACE_TEST_UNSET_VARIABLE is not set`,
		}},
		{"a variable empty, for the state", "cluster: {state_index: st, elasticsearch: {api_key_env: CRAWLSPACE_TEST_EMPTY}}\n" + minimal, []string{
			`c.yaml:1:57: cluster.elasticsearch.api_key_env: environment variable CRAWLSPACE_TEST_EMPTY is empty`,
		}},
		{"a file missing, for the state", "cluster: {state_index: st, elasticsearch: {username: u, password_file: /nonexistent/pw}}\n" + minimal, []string{
			`c.yaml:1:72: cluster.elasticsearch.password_file: cannot read /nonexistent/pw: no such file or directory`,
		}},
	})
}

// In Kubernetes each replica of a Deployment is one process of the shared
// crawl: its name comes from the pod's, through the environment.
func TestClusterNodeNameIsReadFromTheEnvironmentVariableNodeNameEnvNames(t *testing.T) {
	t.Setenv("CRAWLSPACE_TEST_POD_NAME", "crawlspace-7d9c5b6f4-x2k8q")
	t.Setenv("CRAWLSPACE_TEST_EMPTY", "")
	c, err := Parse("c.yaml", []byte("elasticsearch: {}\ncluster: {state_index: st, node_name_env: CRAWLSPACE_TEST_POD_NAME}\n"+minimal))
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Cluster.NodeName; got != "crawlspace-7d9c5b6f4-x2k8q" {
		t.Errorf("node_name = %q, want the variable's value", got)
	}
	runErrCases(t, []errCase{
		{"both forms", "elasticsearch: {}\ncluster: {state_index: st, node_name: a, node_name_env: CRAWLSPACE_TEST_POD_NAME}\n" + minimal, []string{
			`c.yaml:2:57: cluster.node_name_env: give one of node_name and node_name_env`,
		}},
		{"a variable not set", "elasticsearch: {}\ncluster: {state_index: st, node_name_env: CRAWLSPACE_TEST_UNSET_VARIABLE}\n" + minimal, []string{
			`c.yaml:2:43: cluster.node_name_env: environment variable CRAWLSPACE_TEST_UNSET_VARIABLE is not set`,
		}},
		{"a variable empty", "elasticsearch: {}\ncluster: {state_index: st, node_name_env: CRAWLSPACE_TEST_EMPTY}\n" + minimal, []string{
			`c.yaml:2:43: cluster.node_name_env: environment variable CRAWLSPACE_TEST_EMPTY is empty`,
		}},
		{"no variable named", "elasticsearch: {}\ncluster: {state_index: st, node_name_env: \"\"}\n" + minimal, []string{
			`c.yaml:2:43: cluster.node_name_env: must not be empty`,
		}},
	})
}
