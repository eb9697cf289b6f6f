package config

import (
	"crypto/x509"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	promconfig "github.com/prometheus/common/config"
	"github.com/prometheus/exporter-toolkit/web"
	"golang.org/x/net/http/httpguts"
	"gopkg.in/yaml.v3"
)

// Service is the HTTP address of `crawlspace run`: Prometheus' /metrics,
// the status page and the control API (docs/api.md), with the cycle
// notifications the service sends.
type Service struct {
	// Address is host:port. metrics_addr is its older spelling; after Load
	// both hold the address, "" when neither was written and no service
	// block was: nothing listens then.
	Address string `yaml:"address"`
	// WebConfigFile is a web configuration file of Prometheus' exporters
	// (exporter-toolkit): TLS and basic auth for the whole address.
	WebConfigFile string `yaml:"web_config_file"`
	// Tokens are the bearer tokens the control API accepts, each with a
	// name that the log gives as the caller.
	Tokens []APIToken `yaml:"tokens"`
	// Notify are the receivers of the report at the end of every cycle.
	Notify []Notify `yaml:"notify"`
}

// APIToken is one caller of the control API. After Load the secret is in
// Token, whichever of its three forms the file used.
type APIToken struct {
	Name      string `yaml:"name"`
	Token     string `yaml:"token"`
	TokenEnv  string `yaml:"token_env"`
	TokenFile string `yaml:"token_file"`
}

// Notify is one receiver of the cycle reports: an HTTP POST of the report,
// signed with HMAC-SHA256 under Secret, tried Attempts times with a backoff,
// Queue reports waiting at most (past that a report is dropped, warned).
type Notify struct {
	URL        string   `yaml:"url"`
	Secret     string   `yaml:"secret"`
	SecretEnv  string   `yaml:"secret_env"`
	SecretFile string   `yaml:"secret_file"`
	CAFile     string   `yaml:"ca_file"`
	Timeout    Duration `yaml:"timeout"`
	Attempts   int      `yaml:"attempts"`
	Queue      int      `yaml:"queue"`
}

// RootCAs is the pool ca_file gives the receiver's certificate to verify
// against; nil without the key (crypto/tls then uses the system's).
func (n *Notify) RootCAs() (*x509.CertPool, error) {
	return rootCAs("service.notify[].ca_file", n.CAFile)
}

// Defaults and bounds of the service keys.
const (
	// DefaultServiceAddress is where a service block without an address
	// listens: loopback, so nothing beyond the machine reaches the control
	// API unless the configuration says so.
	DefaultServiceAddress = "127.0.0.1:9108"
	// MinTokenLength keeps a token out of reach of guessing: 16 random
	// characters are about 95 bits.
	MinTokenLength = 16
	maxTokens      = 100

	DefaultNotifyTimeout  = 10 * time.Second
	DefaultNotifyAttempts = 5
	DefaultNotifyQueue    = 100
	maxNotify             = 20
)

// tokenName is what the log gives as a caller.
var tokenName = sourceName

func (c *Config) setServiceDefaults(written func(string) bool, dir string) {
	s := &c.Service
	switch {
	case written("metrics_addr") && !written("service.address"):
		s.Address = c.MetricsAddr
	case written("service"):
		defaultAt(written, "service.address", &s.Address, DefaultServiceAddress)
	}
	c.MetricsAddr = s.Address
	s.WebConfigFile = resolve(dir, s.WebConfigFile)
	for i := range s.Tokens {
		s.Tokens[i].TokenFile = resolve(dir, s.Tokens[i].TokenFile)
	}
	for i := range s.Notify {
		n := &s.Notify[i]
		p := indexPath("service.notify", i)
		n.SecretFile = resolve(dir, n.SecretFile)
		n.CAFile = resolve(dir, n.CAFile)
		defaultAt(written, p+".timeout", &n.Timeout, Duration(DefaultNotifyTimeout))
		defaultAt(written, p+".attempts", &n.Attempts, DefaultNotifyAttempts)
		defaultAt(written, p+".queue", &n.Queue, DefaultNotifyQueue)
	}
}

// service checks the service keys and reads their secrets.
func (k *checker) service() {
	c := k.c
	s := &c.Service
	key := "service.address"
	if k.has("metrics_addr") {
		key = "metrics_addr"
		if k.has("service.address") {
			k.errorf("service.address", "give one of service.address and metrics_addr (its older name)")
		}
	}
	if s.Address != "" {
		if _, port, err := net.SplitHostPort(s.Address); err != nil {
			k.errorf(key, "must be host:port, such as 127.0.0.1:9108 or :9108")
		} else if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
			k.errorf(key, "port %q is not a number from 0 to 65535", port)
		}
	}
	if k.has("service.web_config_file") && k.nonEmpty("service.web_config_file", s.WebConfigFile) {
		if _, err := os.Stat(s.WebConfigFile); err != nil {
			k.errorf("service.web_config_file", "cannot read %s: %s", s.WebConfigFile, pathErr(err))
		} else if err := web.Validate(s.WebConfigFile); err != nil {
			k.errorf("service.web_config_file", "%s: %v", s.WebConfigFile, err)
		}
	}
	if len(s.Tokens) > maxTokens {
		k.errorf("service.tokens", "at most %d tokens, got %d", maxTokens, len(s.Tokens))
	}
	names := map[string]bool{}
	values := map[string]string{}
	for i := range s.Tokens {
		t := &s.Tokens[i]
		p := indexPath("service.tokens", i)
		switch {
		case !k.nonEmpty(p+".name", t.Name):
		case !tokenName.MatchString(t.Name):
			k.errorf(p+".name", "%q must be 1 to 64 letters, digits, '_', '.' or '-', starting with a letter or digit", t.Name)
		case names[t.Name]:
			k.errorf(p+".name", "%q names another token too: each caller has its own name", t.Name)
		}
		names[t.Name] = true
		k.secret(p, "token", &t.Token, t.TokenEnv, t.TokenFile, true)
		switch {
		case t.Token == "":
		case !httpguts.ValidHeaderFieldValue(t.Token) || strings.ContainsAny(t.Token, " \t"):
			k.errorf(p+".token", "holds a space, a line break or another control character")
		case len(t.Token) < MinTokenLength:
			k.errorf(p+".token", "is %d characters: at least %d, random (openssl rand -hex 32)", len(t.Token), MinTokenLength)
		case values[t.Token] != "":
			k.errorf(p+".token", "is the token of %s too: each caller has its own", values[t.Token])
		default:
			values[t.Token] = t.Name
		}
	}
	if len(s.Notify) > maxNotify {
		k.errorf("service.notify", "at most %d receivers, got %d", maxNotify, len(s.Notify))
	}
	for i := range s.Notify {
		k.notify(indexPath("service.notify", i), &s.Notify[i])
	}
}

func (k *checker) notify(p string, n *Notify) {
	if k.nonEmpty(p+".url", n.URL) {
		u, err := url.Parse(n.URL)
		switch {
		case err != nil || u.Host == "" || !slices.Contains([]string{"http", "https"}, u.Scheme):
			k.errorf(p+".url", "must be an absolute http or https URL with a host")
		case u.User != nil:
			k.errorf(p+".url", "must not hold credentials: the receiver checks the signature instead")
		}
	}
	k.secret(p, "secret", &n.Secret, n.SecretEnv, n.SecretFile, true)
	k.readable(p+".ca_file", n.CAFile)
	k.span(p+".timeout", n.Timeout, Duration(time.Second), Duration(5*time.Minute))
	k.between(p+".attempts", int64(n.Attempts), 1, 20)
	k.between(p+".queue", int64(n.Queue), 1, 10000)
}

// ServiceWarning warns when the control API's tokens would cross the
// network in clear: tokens configured, an address reachable beyond the
// machine and no TLS in the web configuration. nil otherwise.
func (c *Config) ServiceWarning() *Error {
	s := &c.Service
	if len(s.Tokens) == 0 || s.Address == "" || s.ServesTLS() {
		return nil
	}
	host, _, err := net.SplitHostPort(s.Address)
	if err != nil {
		return nil
	}
	if ip := net.ParseIP(host); host == "localhost" || ip != nil && ip.IsLoopback() {
		return nil
	}
	key := "service.address"
	if _, ok := c.positions["metrics_addr"]; ok {
		key = "metrics_addr"
	}
	return c.Errorf(key, "the control API's tokens would go over plain http, readable and reusable by anyone on the network path: listen on 127.0.0.1, or give service.web_config_file a tls_server_config")
}

// ServesTLS says whether the web configuration turns TLS on.
func (s *Service) ServesTLS() bool {
	if s.WebConfigFile == "" {
		return false
	}
	cfg, err := readWebConfig(s.WebConfigFile)
	return err == nil && cfg.TLSConfig.IsEnabled()
}

// readWebConfig reads what the web configuration says of TLS, as the
// exporter toolkit reads it (web.Validate has checked the file).
func readWebConfig(path string) (*web.Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var f struct {
		TLS struct {
			Cert       string `yaml:"cert"`
			CertFile   string `yaml:"cert_file"`
			Key        string `yaml:"key"`
			KeyFile    string `yaml:"key_file"`
			ClientCA   string `yaml:"client_ca"`
			ClientCAs  string `yaml:"client_ca_file"`
			ClientAuth string `yaml:"client_auth_type"`
		} `yaml:"tls_server_config"`
	}
	if err := yaml.Unmarshal(raw, &f); err != nil {
		return nil, err
	}
	t := f.TLS
	return &web.Config{TLSConfig: web.TLSConfig{TLSCert: t.Cert, TLSCertPath: t.CertFile, TLSKey: promconfig.Secret(t.Key),
		TLSKeyPath: t.KeyFile, ClientCAsText: t.ClientCA, ClientCAs: t.ClientCAs, ClientAuth: t.ClientAuth}}, nil
}
