// Package conformance finds the standards' own test data, which the
// project reads from ../shared/conformance/ beside its checkout and never
// copies into the repository (that folder's README gives the sources and
// licences).
package conformance

import (
	"encoding/json"
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

// HTML5LibCase is one case of html5lib_link_cases.json: a tag whose href
// holds character references, and the value the HTML Standard's tokenizer
// gives the attribute.
type HTML5LibCase struct {
	Set    string `json:"set"`
	Source string `json:"source"`
	HTML   string `json:"html"`
	Value  string `json:"value"`
}

// HTML5LibCases reads the cases of html5lib_link_cases.json, skipping the
// test where the file is absent (Path) and failing it where it holds none.
func HTML5LibCases(t testing.TB) []HTML5LibCase {
	t.Helper()
	b, err := os.ReadFile(Path(t, "html5lib_link_cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var data struct {
		Cases []HTML5LibCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatalf("html5lib_link_cases.json: %v", err)
	}
	if len(data.Cases) == 0 {
		t.Fatal("html5lib_link_cases.json holds no cases")
	}
	return data.Cases
}
