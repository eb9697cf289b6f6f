package config

import (
	"encoding/base64"
	"os"
	"testing"
)

// TestMain gives testdata/config/every-key.yaml the environment variables its
// secrets are read from.
func TestMain(m *testing.M) {
	os.Setenv("CRAWLSPACE_EXAMPLE_PASSWORD", "not-a-real-password")
	os.Setenv("CRAWLSPACE_EXAMPLE_TOKEN", "not-a-real-token")
	os.Setenv("CRAWLSPACE_EXAMPLE_KEYTAB", base64.StdEncoding.EncodeToString([]byte("not-a-real-keytab")))
	os.Exit(m.Run())
}
