package helmtest

import (
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
)

// everyKey is the configuration that sets every key crawlspace knows.
const everyKey = "../../../testdata/config/every-key.yaml"

// Every key crawlspace knows goes through the chart and means what it meant: helm reads values
// as YAML 1.1 into JSON's types (every number a float) and the chart writes them back, keys
// sorted. The configuration every-key.yaml, as values of a shared crawl (less the keys the
// chart owns), loads in the pod the chart describes into the same configuration as the file
// itself, the keys the chart sets apart.
func TestEveryConfigKeyMeansTheSameThroughTheChart(t *testing.T) {
	t.Setenv("CRAWLSPACE_EXAMPLE_PASSWORD", "not-a-real-password")
	t.Setenv("CRAWLSPACE_EXAMPLE_TOKEN", "not-a-real-token")
	t.Setenv("CRAWLSPACE_EXAMPLE_KEYTAB", base64.StdEncoding.EncodeToString([]byte("not-a-real-keytab")))
	want, err := config.Load(everyKey)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := os.ReadFile(everyKey)
	if err != nil {
		t.Fatal(err)
	}
	owned := regexp.MustCompile(`^(state_dir|metrics_addr|  node_name|  address):`)
	values := "mode: shared\nconfig:\n"
	for _, line := range strings.Split(string(raw), "\n") {
		if !owned.MatchString(line) {
			values += "  " + line + "\n"
		}
	}
	c := chartCase{name: "every key", release: "every", values: []string{values}}
	objs := render(t, c, kubeVersions[len(kubeVersions)-1])
	w := workload(t, objs)
	root := t.TempDir()
	path := podFiles(t, root, objs, w, nil)
	// The files the configuration names, where the chart's users put them: beside it.
	if err := os.CopyFS(filepath.Join(filepath.Dir(path), "secrets"), os.DirFS(filepath.Join(filepath.Dir(everyKey), "secrets"))); err != nil {
		t.Fatal(err)
	}
	webConfig, err := os.ReadFile(filepath.Join(filepath.Dir(everyKey), "web-config.yml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(filepath.Dir(path), "web-config.yml"), webConfig, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Setenv("POD_NAME", want.Cluster.NodeName) // the pod named as the file names the process
	for name, value := range podEnv(t, w, "", nil) {
		if name != "POD_NAME" {
			t.Setenv(name, value)
		}
	}
	got, err := config.Load(path)
	if err != nil {
		t.Fatalf("every-key.yaml through the chart does not load:\n%v", err)
	}
	if got.StateDir != "/state" || got.Service.Address != ":9108" {
		t.Errorf("the chart's keys: state_dir %q, service.address %q", got.StateDir, got.Service.Address)
	}
	got.StateDir, got.MetricsAddr, got.Service.Address = want.StateDir, want.MetricsAddr, want.Service.Address
	got.Cluster.NodeNameEnv = ""
	g, w2 := comparable(t, got, filepath.Dir(path)), comparable(t, want, filepath.Dir(everyKey))
	if g != w2 {
		gl, wl := strings.Split(g, "\n"), strings.Split(w2, "\n")
		for i := range min(len(gl), len(wl)) {
			if gl[i] != wl[i] {
				t.Fatalf("through the chart, line %d of the loaded configuration is\n  %s\nwhere the file gives\n  %s", i+1, gl[i], wl[i])
			}
		}
		t.Fatalf("through the chart the loaded configuration has %d lines, the file's %d", len(gl), len(wl))
	}
}

// comparable writes a loaded configuration as indented JSON, its file's directory and name
// written alike whatever they were.
func comparable(t *testing.T, c *config.Config, dir string) string {
	t.Helper()
	c.File = "FILE"
	b, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		t.Fatal(err)
	}
	s := strings.ReplaceAll(string(b), abs+"/", "DIR/")
	return strings.ReplaceAll(s, dir+"/", "DIR/")
}
