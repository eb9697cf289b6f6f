package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestServiceAddressDefaultsToLoopbackAndMetricsAddrIsItsOlderName(t *testing.T) {
	for _, c := range []struct{ name, yaml, want string }{
		{"neither", minimal, ""},
		{"metrics_addr", "metrics_addr: \":9108\"\n" + minimal, ":9108"},
		{"a service block without an address", "service: {tokens: []}\n" + minimal, DefaultServiceAddress},
		{"service.address", "service: {address: \"0.0.0.0:9200\"}\n" + minimal, "0.0.0.0:9200"},
		{"metrics_addr beside a service block", "metrics_addr: 127.0.0.1:0\nservice: {notify: []}\n" + minimal, "127.0.0.1:0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(c.yaml))
			if err != nil {
				t.Fatal(err)
			}
			if cfg.Service.Address != c.want || cfg.MetricsAddr != c.want {
				t.Errorf("service.address %q, metrics_addr %q; want both %q", cfg.Service.Address, cfg.MetricsAddr, c.want)
			}
		})
	}
}

func TestServiceKeysAreValidated(t *testing.T) {
	dir := t.TempDir()
	badWeb := filepath.Join(dir, "web.yml")
	if err := os.WriteFile(badWeb, []byte("tls_server_config:\n  cert_file: missing.crt\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	runErrCases(t, []errCase{
		{"both spellings of the address", "metrics_addr: 127.0.0.1:1\nservice: {address: 127.0.0.1:2}\n" + minimal, []string{
			`c.yaml:2:20: service.address: give one of service.address and metrics_addr (its older name)`,
		}},
		{"an address without a port", "service: {address: localhost}\n" + minimal, []string{
			`c.yaml:1:20: service.address: must be host:port, such as 127.0.0.1:9108 or :9108`,
		}},
		{"tokens", `service:
  tokens:
    - {name: "cms hook", token: not-a-real-token-1}
    - {name: cms, token: short}
    - {name: cms, token: not-a-real-token-1}
    - {name: ops}
    - {name: ci, token: "not a real token 22"}
` + minimal, []string{
			`c.yaml:3:14: service.tokens[0].name: "cms hook" must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit`,
			`c.yaml:4:26: service.tokens[1].token: is 5 characters: at least 16, random (openssl rand -hex 32)`,
			`c.yaml:5:14: service.tokens[2].name: "cms" names another token too: each caller has its own name`,
			`c.yaml:5:26: service.tokens[2].token: is the token of cms hook too: each caller has its own`,
			`c.yaml:6:7: service.tokens[3].token: is required (or token_env, or token_file)`,
			`c.yaml:7:25: service.tokens[4].token: holds a space, a line break or another control character`,
		}},
		{"a token from an unset variable", "service: {tokens: [{name: a, token_env: CRAWLSPACE_NO_SUCH_TOKEN}]}\n" + minimal, []string{
			`c.yaml:1:41: service.tokens[0].token_env: environment variable CRAWLSPACE_NO_SUCH_TOKEN is not set`,
		}},
		{"a web configuration that cannot be served", "service: {web_config_file: " + badWeb + "}\n" + minimal, []string{
			`c.yaml:1:28: service.web_config_file: ` + badWeb + `: missing one of key or key_file`,
		}},
		{"a missing web configuration", "service: {web_config_file: no-such-web.yml}\n" + minimal, []string{
			`c.yaml:1:28: service.web_config_file: cannot read no-such-web.yml: no such file or directory`,
		}},
		{"notify", `service:
  notify:
    - {url: "ftp://hooks.example/", secret: s}
    - {url: "https://user:pw@hooks.example/"}
` + minimal, []string{
			`c.yaml:3:13: service.notify[0].url: must be an absolute http or https URL with a host`,
			`c.yaml:4:7: service.notify[1].secret: is required (or secret_env, or secret_file)`,
			`c.yaml:4:13: service.notify[1].url: must not hold credentials: the receiver checks the signature instead`,
		}},
	})
}

func TestTokensOverPlainHTTPBeyondLoopbackAreWarned(t *testing.T) {
	tok := "  tokens: [{name: cms, token: not-a-real-token-1}]\n"
	for _, c := range []struct {
		name, yaml string
		warned     bool
	}{
		{"loopback", "service:\n  address: 127.0.0.1:9108\n" + tok, false},
		{"localhost", "service:\n  address: localhost:9108\n" + tok, false},
		{"every interface", "service:\n  address: \":9108\"\n" + tok, true},
		{"a LAN address", "service:\n  address: 10.1.2.3:9108\n" + tok, true},
		{"every interface without tokens", "service:\n  address: \":9108\"\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg, err := Parse("c.yaml", []byte(c.yaml+minimal))
			if err != nil {
				t.Fatal(err)
			}
			w := cfg.ServiceWarning()
			if (w != nil) != c.warned {
				t.Fatalf("warning %v, want one: %v", w, c.warned)
			}
			if w != nil && !strings.HasPrefix(w.Error(), "c.yaml:2:12: service.address: the control API's tokens would go over plain http") {
				t.Errorf("warning %q", w)
			}
		})
	}
}
