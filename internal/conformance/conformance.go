// Package conformance finds the standards' own test data, which the
// project reads from ../shared/conformance/ beside its checkout and never
// copies into the repository (that folder's README gives the sources and
// licences).
package conformance

import (
	"os"
	"path/filepath"
	"testing"
)

// Path is the file name of ../shared/conformance/ relative to the
// repository root. Where the file is absent the test skips, saying so: it
// never passes without having read the cases.
func Path(t testing.TB, name string) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(root, "..", "shared", "conformance", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("conformance data %s is absent (%v): the standards' test data lives in ../shared/conformance/ beside the checkout", name, err)
	}
	return p
}

// repoRoot is the folder holding go.mod, from the test's working
// directory (its package's folder) up.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		up := filepath.Dir(dir)
		if up == dir {
			return "", os.ErrNotExist
		}
		dir = up
	}
}
