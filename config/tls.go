package config

import (
	"crypto/x509"
	"fmt"
	"os"
)

// RootCAs is the pool fetch.ca_file gives crawled sites' certificates to
// verify against; nil without the key (crypto/tls then uses the system's).
func (f *Fetch) RootCAs() (*x509.CertPool, error) { return rootCAs("fetch.ca_file", f.CAFile) }

// RootCAs is the pool elasticsearch.ca_file gives the cluster's certificate
// to verify against; nil without the key (crypto/tls then uses the system's).
func (es *Elasticsearch) RootCAs() (*x509.CertPool, error) {
	return rootCAs("elasticsearch.ca_file", es.CAFile)
}

// rootCAs reads a ca_file: its certificates are added to the system's, so a
// private CA extends what is trusted instead of replacing it (a crawl
// reaching an intranet and the public web needs both).
func rootCAs(key, file string) (*x509.CertPool, error) {
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	pool, err := x509.SystemCertPool()
	if err != nil {
		pool = x509.NewCertPool()
	}
	if !pool.AppendCertsFromPEM(pem) {
		return nil, fmt.Errorf("%s %s: no certificates found", key, file)
	}
	return pool, nil
}
