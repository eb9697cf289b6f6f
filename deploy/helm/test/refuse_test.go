package helmtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// Values that cannot work stop helm with a message naming the key and what to do, before
// anything reaches the cluster.
func TestTheChartRefusesValuesThatCannotWorkSayingWhy(t *testing.T) {
	const sources = "  sources: [{name: a, start_urls: [\"https://a.example/\"]}]\n"
	for _, tc := range []struct {
		name, values, want string
	}{
		{"no configuration (the chart's defaults)", "{}", "config.sources: give the crawl's sources in config"},
		{"a shared crawl without its state index", "mode: shared\nconfig:\n  elasticsearch: {}\n" + sources,
			"config.cluster.state_index: mode shared keeps the crawl's state in Elasticsearch"},
		{"a shared crawl without a cluster", "mode: shared\nconfig:\n  cluster: {state_index: st}\n" + sources,
			"config.elasticsearch: mode shared needs the cluster the state lives in"},
		{"a node name written for every process", "mode: shared\nconfig:\n  elasticsearch: {}\n  cluster: {state_index: st, node_name: a}\n" + sources,
			"config.cluster.node_name: the chart names each process after its pod: leave it out"},
		{"a single process with its state in Elasticsearch", "mode: single\nconfig:\n  elasticsearch: {}\n  cluster: {state_index: st}\n" + sources,
			"config.cluster.state_index: mode single keeps the state on its volume; for a crawl shared through Elasticsearch use mode shared"},
		{"the metrics address the chart sets", "config:\n  metrics_addr: 127.0.0.1:9108\n" + sources,
			"config.metrics_addr: the chart sets it"},
		{"state_dir the chart sets", "config:\n  state_dir: /data\n" + sources,
			"config.state_dir: the chart sets it"},
		{"a shape that is neither", "mode: both\nconfig:\n" + sources, "mode"},
		{"a misspelt value", "replica: 3\nconfig:\n" + sources, "replica"},
		{"a secret file without its Secret", "secretFiles: [{mountPath: /secrets/x}]\nconfig:\n" + sources, "secretName"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := helm(t, "template", "r", chartDir, "--kube-version", kubeVersions[len(kubeVersions)-1], "-f", writeValues(t, tc.values))
			if err == nil {
				t.Fatalf("helm template accepted the values:\n%s", out)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Errorf("helm template's error lacks %q:\n%v", tc.want, err)
			}
		})
	}
}

// The schema check is no formality: objects Kubernetes would refuse fail it, each with the
// field at fault.
func TestTheSchemaCheckRefusesWhatKubernetesWouldRefuse(t *testing.T) {
	schemas := schemasOf(t, kubeVersions[0])
	deployment := func(t *testing.T) map[string]any {
		for _, o := range render(t, chartCases[1], kubeVersions[0]) {
			if str(o, "kind") == "Deployment" {
				if err := schemas.validate(o); err != nil {
					t.Fatalf("the shared example's Deployment: %v", err)
				}
				return o
			}
		}
		t.Fatal("the shared example renders no Deployment")
		return nil
	}
	for _, tc := range []struct {
		name   string
		change func(o map[string]any)
		want   string
	}{
		{"a misspelt field", func(o map[string]any) {
			ctr := list(o, "spec", "template", "spec", "containers")[0].(map[string]any)
			ctr["imagePullpolicy"] = "Always"
		}, "imagePullpolicy"},
		{"a container without its name", func(o map[string]any) {
			delete(list(o, "spec", "template", "spec", "containers")[0].(map[string]any), "name")
		}, "name"},
		{"a count written as a string", func(o map[string]any) { mapAt(o, "spec")["replicas"] = "3" }, "replicas"},
		{"a Deployment without its selector", func(o map[string]any) { delete(mapAt(o, "spec"), "selector") }, "selector"},
		{"a kind no version has", func(o map[string]any) { o["kind"] = "Deploymnet" }, "no schema"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := deployment(t)
			tc.change(o)
			err := schemas.validate(o)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("validate = %v, want an error about %s", err, tc.want)
			}
		})
	}
}

// The oldest version the objects are checked against is the one Chart.yaml admits.
func TestTheOldestVersionCheckedIsTheChartsFloor(t *testing.T) {
	data, err := os.ReadFile(filepath.Join(chartDir, "Chart.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var chart struct {
		KubeVersion string `json:"kubeVersion"`
	}
	if err := yaml.Unmarshal(data, &chart); err != nil {
		t.Fatal(err)
	}
	floor := strings.TrimSuffix(strings.TrimSpace(strings.TrimPrefix(chart.KubeVersion, ">=")), "-0")
	if floor != kubeVersions[0] {
		t.Errorf("Chart.yaml's kubeVersion %q admits %s, but the oldest version checked is %s", chart.KubeVersion, floor, kubeVersions[0])
	}
}
