// Package helmtest checks the Helm chart in deploy/helm/crawlspace: helm lint, helm template of
// both shapes and several value sets, every rendered object against the Kubernetes JSON schemas,
// the objects' wiring, and the rendered configuration through crawlspace's own loader with the
// environment and files its pod would have.
package helmtest

import (
	"archive/zip"
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"sigs.k8s.io/yaml"
)

// chartDir is the chart under test; examplesDir its example values.
const (
	chartDir    = "../crawlspace"
	examplesDir = "../examples"
)

// kubeVersions are the Kubernetes versions the rendered objects are checked against: the
// oldest the chart allows (Chart.yaml's kubeVersion) and the newest the schemas cover.
var kubeVersions = []string{"1.27.0", "1.37.0"}

// inCI says whether CI runs the tests: a missing tool fails them there instead of skipping.
func inCI() bool {
	switch os.Getenv("CI") {
	case "", "0", "false", "FALSE", "False", "no":
		return false
	}
	return true
}

var tools struct {
	once    sync.Once
	helm    string
	schemas *zip.ReadCloser
	err     error
}

// toolsFor returns helm and the schemas' wheel: CRAWLSPACE_HELM and CRAWLSPACE_K8S_SCHEMAS
// when scripts/test set them, else what scripts/helm builds or fetches (once, into the cache).
func toolsFor(t *testing.T) (string, *zip.ReadCloser) {
	t.Helper()
	tools.once.Do(func() {
		tools.helm = os.Getenv("CRAWLSPACE_HELM")
		wheel := os.Getenv("CRAWLSPACE_K8S_SCHEMAS")
		if tools.helm == "" {
			tools.helm, tools.err = script("binary")
		}
		if tools.err == nil && wheel == "" {
			wheel, tools.err = script("schemas")
		}
		if tools.err == nil {
			tools.schemas, tools.err = zip.OpenReader(wheel)
		}
	})
	if tools.err != nil {
		if inCI() {
			t.Fatalf("the chart's tools: %v", tools.err)
		}
		t.Skipf("the chart's tools are missing, so the chart is NOT checked: %v", tools.err)
	}
	return tools.helm, tools.schemas
}

// script runs scripts/helm VERB and returns the path it prints.
func script(verb string) (string, error) {
	cmd := exec.Command(filepath.Join("..", "..", "..", "scripts", "helm"), verb)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("scripts/helm %s: %v: %s", verb, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(string(out)), nil
}

// helm runs helm with args and returns its stdout, and its stderr joined to any error.
func helm(t *testing.T, args ...string) (string, error) {
	t.Helper()
	bin, _ := toolsFor(t)
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return stdout.String(), fmt.Errorf("helm %s: %v\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.String(), nil
}

// schemaSet checks objects against the JSON schemas of one Kubernetes version, as the
// kubernetes-validate wheel carries them: one file per kind, group and version, each
// referring to the version's _definitions.json by its kubernetes.io address, which the
// loader answers from the wheel (no network).
type schemaSet struct {
	dir      string
	wheel    *zip.ReadCloser
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	compiled map[string]*jsonschema.Schema
}

var (
	setsMu sync.Mutex
	sets   = map[string]*schemaSet{}
)

// schemasOf returns the schema set of a Kubernetes version (1.27.0), in its strict form:
// a field no schema declares is an error, as in kubectl's strict field validation.
func schemasOf(t *testing.T, version string) *schemaSet {
	t.Helper()
	_, wheel := toolsFor(t)
	setsMu.Lock()
	defer setsMu.Unlock()
	if s := sets[version]; s != nil {
		return s
	}
	s := &schemaSet{dir: "kubernetes_validate/kubernetes-json-schema/v" + version + "-local-strict/", wheel: wheel,
		compiled: map[string]*jsonschema.Schema{}}
	s.compiler = jsonschema.NewCompiler()
	s.compiler.UseLoader(s)
	if _, err := s.file("_definitions.json"); err != nil {
		t.Fatalf("the schemas of Kubernetes %s: %v", version, err)
	}
	sets[version] = s
	return s
}

// file reads one of the version's schema files from the wheel.
func (s *schemaSet) file(name string) (any, error) {
	f, err := s.wheel.Open(s.dir + name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return jsonschema.UnmarshalJSON(f)
}

// Load answers the schemas' references to https://kubernetes.io/api/NAME from the wheel.
func (s *schemaSet) Load(url string) (any, error) {
	name, ok := strings.CutPrefix(url, "https://kubernetes.io/api/")
	if !ok || strings.Contains(name, "/") {
		return nil, fmt.Errorf("no schema at %s here (the schemas refer only to kubernetes.io/api/_definitions.json)", url)
	}
	return s.file(name)
}

// schemaFile names the file of a kind: deployment-apps-v1.json, configmap-v1.json,
// poddisruptionbudget-policy-v1.json (a group's first label).
func schemaFile(apiVersion, kind string) string {
	group, version, ok := strings.Cut(apiVersion, "/")
	if !ok {
		return strings.ToLower(kind) + "-" + apiVersion + ".json"
	}
	group, _, _ = strings.Cut(group, ".")
	return strings.ToLower(kind) + "-" + group + "-" + version + ".json"
}

// validate checks one object (decoded from JSON by jsonschema.UnmarshalJSON) against the
// schema of its apiVersion and kind; an object of a kind the version does not know is an error.
func (s *schemaSet) validate(obj any) error {
	m, _ := obj.(map[string]any)
	apiVersion, _ := m["apiVersion"].(string)
	kind, _ := m["kind"].(string)
	if apiVersion == "" || kind == "" {
		return errors.New("the object has no apiVersion or kind")
	}
	name := schemaFile(apiVersion, kind)
	s.mu.Lock()
	sch, ok := s.compiled[name]
	if !ok {
		doc, err := s.file(name)
		if err == nil {
			loc := "file:///" + s.dir + name
			if err = s.compiler.AddResource(loc, doc); err == nil {
				sch, err = s.compiler.Compile(loc)
			}
		}
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("%s %s: no schema in Kubernetes %s (%v)", apiVersion, kind, strings.TrimSuffix(strings.TrimPrefix(s.dir, "kubernetes_validate/kubernetes-json-schema/v"), "-local-strict/"), err)
		}
		s.compiled[name] = sch
	}
	s.mu.Unlock()
	return sch.Validate(obj)
}

// objects splits helm template's output into its objects, each as YAML reads it for
// Kubernetes (sigs.k8s.io/yaml, YAML 1.1 as kubectl), decoded for the schemas (numbers kept
// as written).
func objects(t *testing.T, rendered string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, doc := range strings.Split(rendered, "\n---") {
		j, err := yaml.YAMLToJSON([]byte(doc))
		if err != nil {
			t.Fatalf("rendered YAML does not parse: %v\n%s", err, doc)
		}
		if bytes.Equal(bytes.TrimSpace(j), []byte("null")) {
			continue // a comment or an empty document
		}
		v, err := jsonschema.UnmarshalJSON(bytes.NewReader(j))
		if err != nil {
			t.Fatal(err)
		}
		m, ok := v.(map[string]any)
		if !ok {
			t.Fatalf("a rendered document is no object: %s", doc)
		}
		out = append(out, m)
	}
	return out
}

// writeValues writes a values file for helm -f, in a directory whose name holds no comma
// (helm splits -f at commas, and t.TempDir names directories after the test).
func writeValues(t *testing.T, values string) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "values")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	path := filepath.Join(dir, "values.yaml")
	if err := os.WriteFile(path, []byte(values), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
