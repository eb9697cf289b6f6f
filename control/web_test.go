package control_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/control"
	"github.com/crawlspace/crawlspace/monitor"
)

// selfSigned writes a certificate for 127.0.0.1 and its key into dir and
// returns their paths and a pool trusting the certificate.
func selfSigned(t *testing.T, dir string) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "crawlspace test"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600)
	cert, _ := x509.ParseCertificate(der)
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

// With a web configuration of TLS and basic auth, the whole address is
// served over TLS only and asks for the basic auth credentials: /metrics,
// the status page and the API, whose calls then carry their token in
// X-Crawlspace-Token.
func TestAWebConfigurationPutsTLSAndBasicAuthOverTheWholeAddress(t *testing.T) {
	f := newFixture(t)
	dir := t.TempDir()
	certFile, keyFile, pool := selfSigned(t, dir)
	hash, err := bcrypt.GenerateFromPassword([]byte("prom-password"), bcrypt.MinCost)
	if err != nil {
		t.Fatal(err)
	}
	webConfig := filepath.Join(dir, "web.yml")
	os.WriteFile(webConfig, []byte("tls_server_config:\n  cert_file: "+certFile+"\n  key_file: "+keyFile+
		"\nbasic_auth_users:\n  prometheus: "+string(hash)+"\n"), 0o600)
	cfg := &config.Config{Sources: []config.Source{{Name: "site"}}}
	srv := monitor.NewServer(cfg, f.c, monitor.NewMetrics("t", []string{"site"}), nil, "t", slog.New(slog.DiscardHandler))
	api := control.New(control.Options{Crawler: f.c, Status: func() any { return srv.View() }, Log: slog.New(slog.DiscardHandler),
		Tokens: []config.APIToken{{Name: "ops", Token: opsToken}}})
	addr, err := srv.Start("127.0.0.1:0", webConfig, api)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(t.Context()) })
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool}}}
	get := func(url string, headers ...string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest("GET", url, nil)
		for i := 0; i+1 < len(headers); i += 2 {
			req.Header.Set(headers[i], headers[i+1])
		}
		if strings.Contains(url, "@") {
			req.SetBasicAuth("prometheus", "prom-password")
			req.URL.User = nil
		}
		res, err := client.Do(req)
		if err != nil {
			return 0, err.Error()
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		return res.StatusCode, string(b)
	}
	base, authed := "https://"+addr.String(), "https://prometheus@"+addr.String()
	for _, c := range []struct {
		name, url string
		headers   []string
		status    int
		holds     string
	}{
		{"metrics without credentials", base + "/metrics", nil, 401, ""},
		{"metrics", authed + "/metrics", nil, 200, "crawlspace_build_info"},
		{"the status page", authed + "/", nil, 200, "<html"},
		{"the API without credentials", base + "/api/v1/status", []string{"X-Crawlspace-Token", opsToken}, 401, ""},
		{"the API without a token", authed + "/api/v1/status", nil, 401, "token"},
		{"the API", authed + "/api/v1/status", []string{"X-Crawlspace-Token", opsToken}, 200, `"sources"`},
		{"the OpenAPI document", authed + control.OpenAPIPath, nil, 200, `"openapi"`},
	} {
		if status, body := get(c.url, c.headers...); status != c.status || !strings.Contains(body, c.holds) {
			t.Errorf("%s: %d %.200q, want %d holding %q", c.name, status, body, c.status, c.holds)
		}
	}
	res, err := http.Get("http://" + addr.String() + "/metrics")
	if err == nil && res.StatusCode == 200 {
		t.Error("plain http is served beside TLS")
	}
	if err == nil {
		res.Body.Close()
	}
}
