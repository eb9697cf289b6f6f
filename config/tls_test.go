package config

import (
	"crypto/x509"
	"encoding/pem"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Both ca_file keys are read one way: the file's certificates join the
// system's roots.
func TestBothCAFilesAddTheirCertificatesToTheSystemRoots(t *testing.T) {
	srv := httptest.NewTLSServer(nil)
	defer srv.Close()
	cert := srv.Certificate()
	file := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(file, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: cert.Raw}), 0o600); err != nil {
		t.Fatal(err)
	}
	sys, err := x509.SystemCertPool()
	if err != nil {
		t.Skip("no system roots:", err)
	}
	sys.AddCert(cert)
	for key, read := range map[string]func() (*x509.CertPool, error){
		"fetch":         (&Fetch{CAFile: file}).RootCAs,
		"elasticsearch": (&Elasticsearch{CAFile: file}).RootCAs,
	} {
		pool, err := read()
		if err != nil {
			t.Fatalf("%s: %v", key, err)
		}
		if !pool.Equal(sys) {
			t.Errorf("%s: the pool is not the system's roots and the file's", key)
		}
	}

	if pool, err := (&Fetch{}).RootCAs(); pool != nil || err != nil {
		t.Errorf("no ca_file: %v, %v; want the system's (nil)", pool, err)
	}
	empty := filepath.Join(t.TempDir(), "empty.pem")
	if err := os.WriteFile(empty, []byte("no PEM here"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := (&Elasticsearch{CAFile: empty}).RootCAs(); err == nil || !strings.Contains(err.Error(), "elasticsearch.ca_file "+empty+": no certificates found") {
		t.Errorf("a file without certificates: %v", err)
	}
}
