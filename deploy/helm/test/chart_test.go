package helmtest

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/crawlspace/crawlspace/config"
)

// chartCase is a release of the chart: its values, the Secrets the release expects to find
// (name, then key, then value), and the kinds it must render.
type chartCase struct {
	name, release string
	// values are values files: a path under examplesDir, or YAML written for the case.
	values  []string
	secrets map[string]map[string]string
	kinds   []string
}

const caPEM = "-----BEGIN CERTIFICATE-----\nnot-a-real-certificate\n-----END CERTIFICATE-----\n"

var chartCases = []chartCase{
	{
		name: "single, the example", release: "intranet",
		values: []string{"single.yaml"},
		secrets: map[string]map[string]string{
			"crawlspace-elasticsearch": {"password": "not-a-real-password"},
			"crawlspace-es-ca":         {"ca.crt": caPEM},
		},
		kinds: []string{"ConfigMap", "Service", "StatefulSet"},
	},
	{
		name: "shared, the example", release: "intranet",
		values: []string{"shared.yaml"},
		secrets: map[string]map[string]string{
			"crawlspace-elasticsearch": {"api-key": "bm90LWE6cmVhbC1rZXk="},
			"crawlspace-es-ca":         {"ca.crt": caPEM},
		},
		kinds: []string{"ConfigMap", "Service", "Deployment", "PodDisruptionBudget"},
	},
	{
		// A restored volume, a source signing in with a password file from a Secret's one key,
		// a CA from a ConfigMap, scheduling and resources of one's own, the file sink on /state.
		name: "single, an existing claim and files of one's own", release: "wiki",
		values: []string{`
mode: single
image: {repository: registry.example/crawlspace, tag: 0.1.0-chromium, pullPolicy: Always}
persistence: {existingClaim: wiki-state-restored}
secretFiles:
  - secretName: wiki-credentials
    mountPath: /secrets/wiki
    items: [{key: password, path: password}]
extraVolumes:
  - name: site-ca
    configMap: {name: site-ca}
extraVolumeMounts:
  - {name: site-ca, mountPath: /etc/ssl/site-ca, readOnly: true}
resources:
  requests: {cpu: "1", memory: 1Gi}
  limits: {cpu: "4", memory: 4Gi}
nodeSelector: {kubernetes.io/os: linux}
tolerations: [{key: dedicated, operator: Equal, value: crawler, effect: NoSchedule}]
podAnnotations: {prometheus.io/scrape: "true", prometheus.io/port: "9108"}
metrics: {port: 9200, service: {enabled: false}}
config:
  output: {file: /state/documents.ndjson}
  fetch: {ca_file: /etc/ssl/site-ca/ca.crt}
  sources:
    - name: wiki
      start_urls: ["https://wiki.intranet.example/"]
      auth: {method: basic, username: crawler, password_file: /secrets/wiki/password}
`},
		secrets: map[string]map[string]string{"wiki-credentials": {"password": "not-a-real-password", "unused": "x"}},
		kinds:   []string{"ConfigMap", "Service", "StatefulSet"},
	},
	{
		// helm's longest release name, processes updated one at a time, the state on its own
		// cluster with a password from a Secret's variables, no PDB and no metrics Service.
		name: "shared, a long name, its state on another cluster", release: strings.Repeat("a", 53),
		values: []string{`
mode: shared
replicas: 5
strategy: {type: RollingUpdate, rollingUpdate: {maxUnavailable: 1, maxSurge: 0}}
podDisruptionBudget: {enabled: false}
metrics: {service: {enabled: false}}
envFrom:
  - secretRef: {name: state-credentials}
env:
  - name: ES_API_KEY
    valueFrom: {secretKeyRef: {name: documents-credentials, key: api-key}}
topologySpreadConstraints:
  - maxSkew: 1
    topologyKey: kubernetes.io/hostname
    whenUnsatisfiable: ScheduleAnyway
    labelSelector: {matchLabels: {app.kubernetes.io/name: crawlspace}}
config:
  elasticsearch: {addresses: ["https://search.example:9200"], index: intranet, api_key_env: ES_API_KEY}
  cluster:
    state_index: intranet-state
    lease_ttl: 1m
    elasticsearch: {addresses: ["https://state.example:9200"], username: crawler-state, password_env: STATE_PASSWORD}
  sources:
    - name: intranet
      start_urls: ["https://intranet.example/"]
`},
		secrets: map[string]map[string]string{
			"state-credentials":     {"STATE_PASSWORD": "not-a-real-password"},
			"documents-credentials": {"api-key": "bm90LWE6cmVhbC1rZXk="},
		},
		kinds: []string{"ConfigMap", "Deployment"},
	},
}

// valuesArgs are the -f arguments of a case.
func valuesArgs(t *testing.T, c chartCase) []string {
	t.Helper()
	var args []string
	for _, v := range c.values {
		path := filepath.Join(examplesDir, v)
		if strings.Contains(v, "\n") {
			path = writeValues(t, v)
		}
		args = append(args, "-f", path)
	}
	return args
}

// render is helm template of a case for a Kubernetes version, in namespace crawl.
func render(t *testing.T, c chartCase, kubeVersion string) []map[string]any {
	t.Helper()
	out, err := helm(t, append([]string{"template", c.release, chartDir, "--namespace", "crawl", "--kube-version", kubeVersion}, valuesArgs(t, c)...)...)
	if err != nil {
		t.Fatal(err)
	}
	return objects(t, out)
}

func TestTheChartLintsCleanWithEachValueSet(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			out, err := helm(t, append([]string{"lint", "--strict", chartDir}, valuesArgs(t, c)...)...)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(out, "1 chart(s) linted, 0 chart(s) failed") || strings.Contains(out, "[WARNING]") || strings.Contains(out, "[ERROR]") {
				t.Errorf("helm lint --strict:\n%s", out)
			}
		})
	}
}

// Each object helm template renders is one Kubernetes takes: valid against the JSON schema
// of its kind in the oldest and the newest version the chart supports, with no field the
// schema does not declare, and named as Kubernetes names objects.
func TestRenderedObjectsAreValidKubernetesObjects(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			for _, v := range kubeVersions {
				schemas := schemasOf(t, v)
				objs := render(t, c, v)
				var kinds []string
				for _, o := range objs {
					kind, name := str(o, "kind"), str(o, "metadata", "name")
					kinds = append(kinds, kind)
					if err := schemas.validate(o); err != nil {
						t.Errorf("Kubernetes %s: %s %s: %v", v, kind, name, err)
					}
					if msg := nameProblem(kind, name); msg != "" {
						t.Errorf("%s %q: %s", kind, name, msg)
					}
					for k, val := range mapAt(o, "metadata", "labels") {
						if s, _ := val.(string); !labelValue.MatchString(s) {
							t.Errorf("%s %s: label %s=%q is no label value", kind, name, k, s)
						}
					}
				}
				slices.Sort(kinds)
				want := slices.Sorted(slices.Values(c.kinds))
				if !slices.Equal(kinds, want) {
					t.Errorf("Kubernetes %s: rendered %v, want %v", v, kinds, want)
				}
			}
		})
	}
}

var (
	// Kubernetes' names: a DNS-1123 subdomain for most objects, a DNS-1035 label for a Service.
	dns1123Subdomain = regexp.MustCompile(`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`)
	dns1035Label     = regexp.MustCompile(`^[a-z]([-a-z0-9]*[a-z0-9])?$`)
	labelValue       = regexp.MustCompile(`^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$`)
)

func nameProblem(kind, name string) string {
	switch {
	case kind == "Service" && (len(name) > 63 || !dns1035Label.MatchString(name)):
		return "a Service's name must be a DNS-1035 label of at most 63 characters"
	case len(name) > 253 || !dns1123Subdomain.MatchString(name):
		return "not a DNS-1123 subdomain"
	case (kind == "Deployment" || kind == "StatefulSet") && len(name) > 63:
		return "past 63 characters: its pods' label values would be cut"
	}
	return ""
}

// The objects refer to one another as Kubernetes will look them up: selectors select the
// pods, probes and the Service name the container's port, mounts name volumes, and the pod
// keeps to the security settings and resources the chart promises.
func TestRenderedObjectsReferToOneAnotherAndKeepTheSecuritySettings(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c, kubeVersions[len(kubeVersions)-1])
			w := workload(t, objs)
			pod := mapAt(w, "spec", "template")
			podLabels := mapAt(pod, "metadata", "labels")
			selects := func(what string, sel map[string]any) {
				if len(sel) == 0 {
					t.Errorf("%s selects nothing", what)
				}
				for k, v := range sel {
					if podLabels[k] != v {
						t.Errorf("%s selects %s=%v, which the pods lack (%v)", what, k, v, podLabels)
					}
				}
			}
			selects(str(w, "kind")+" selector", mapAt(w, "spec", "selector", "matchLabels"))
			spec := mapAt(pod, "spec")
			ctr := container(t, spec)
			ports := map[string]bool{}
			for _, p := range list(ctr, "ports") {
				ports[str(p.(map[string]any), "name")] = true
			}
			for probe, path := range map[string]string{"startupProbe": "/healthz", "livenessProbe": "/healthz", "readinessProbe": "/readyz"} {
				if got := str(ctr, probe, "httpGet", "path"); got != path {
					t.Errorf("%s on %q, want %s", probe, got, path)
				}
				if port := str(ctr, probe, "httpGet", "port"); !ports[port] {
					t.Errorf("%s on port %q, which the container does not name", probe, port)
				}
			}
			for _, o := range objs {
				switch str(o, "kind") {
				case "Service":
					selects("Service "+str(o, "metadata", "name"), mapAt(o, "spec", "selector"))
					for _, p := range list(o, "spec", "ports") {
						if tp := str(p.(map[string]any), "targetPort"); !ports[tp] {
							t.Errorf("Service targets port %q, which the container does not name", tp)
						}
					}
				case "PodDisruptionBudget":
					selects("PodDisruptionBudget", mapAt(o, "spec", "selector", "matchLabels"))
				}
			}
			if str(w, "kind") == "StatefulSet" {
				svc := str(w, "spec", "serviceName")
				if !slices.ContainsFunc(objs, func(o map[string]any) bool { return str(o, "kind") == "Service" && str(o, "metadata", "name") == svc }) {
					t.Errorf("the StatefulSet's serviceName %q is no Service of the release", svc)
				}
			}
			volumes := map[string]map[string]any{}
			for _, v := range list(spec, "volumes") {
				volumes[str(v.(map[string]any), "name")] = v.(map[string]any)
			}
			for _, v := range list(w, "spec", "volumeClaimTemplates") {
				volumes[str(v.(map[string]any), "metadata", "name")] = v.(map[string]any)
			}
			for _, m := range list(ctr, "volumeMounts") {
				if name := str(m.(map[string]any), "name"); volumes[name] == nil {
					t.Errorf("the container mounts volume %q, which the pod lacks", name)
				}
			}
			if cm := str(volumes["config"], "configMap", "name"); !slices.ContainsFunc(objs, func(o map[string]any) bool {
				return str(o, "kind") == "ConfigMap" && str(o, "metadata", "name") == cm
			}) {
				t.Errorf("the config volume mounts ConfigMap %q, which the release does not make", cm)
			}
			if volumes["state"] == nil {
				t.Error("no volume at /state")
			}

			for _, want := range []struct {
				got  any
				what string
				is   any
			}{
				{at(spec, "securityContext", "runAsNonRoot"), "pod runAsNonRoot", true},
				{at(spec, "automountServiceAccountToken"), "automountServiceAccountToken", false},
				{at(ctr, "securityContext", "readOnlyRootFilesystem"), "readOnlyRootFilesystem", true},
				{at(ctr, "securityContext", "allowPrivilegeEscalation"), "allowPrivilegeEscalation", false},
				{at(ctr, "securityContext", "privileged"), "privileged", false},
			} {
				if want.got != want.is {
					t.Errorf("%s = %v, want %v", want.what, want.got, want.is)
				}
			}
			if drop := list(ctr, "securityContext", "capabilities", "drop"); !slices.Contains(drop, any("ALL")) {
				t.Errorf("capabilities dropped: %v, want ALL", drop)
			}
			if uid := fmt.Sprint(at(spec, "securityContext", "runAsUser")); uid == "0" || uid == "<nil>" {
				t.Errorf("runAsUser = %s, want a user other than root", uid)
			}
			for _, r := range []string{"requests", "limits"} {
				for _, k := range []string{"cpu", "memory"} {
					if at(ctr, "resources", r, k) == nil {
						t.Errorf("no resources.%s.%s", r, k)
					}
				}
			}
			// The documented stop, at its longest: 6 s for the requests under way to end (the
			// most measured, docs/cluster.md), 5 s for the status server, 10 s for the sink's
			// writes, 10 s for a shared store's partitions.
			if grace, err := strconv.Atoi(fmt.Sprint(at(spec, "terminationGracePeriodSeconds"))); err != nil || grace < 31 {
				t.Errorf("terminationGracePeriodSeconds %v is shorter than crawlspace's stop (31 s at most)", at(spec, "terminationGracePeriodSeconds"))
			}
		})
	}
}

// The configuration the chart writes, read by crawlspace's own loader (the one `crawlspace
// run` uses) in the pod the chart describes: its environment (the pod's name, the Secrets'
// variables) and its files (the ConfigMap and the Secrets where they are mounted, rebuilt
// under a temporary directory) give every key a value crawlspace accepts.
func TestTheRenderedConfigLoadsInThePodTheChartDescribes(t *testing.T) {
	for _, c := range chartCases {
		t.Run(c.name, func(t *testing.T) {
			objs := render(t, c, kubeVersions[len(kubeVersions)-1])
			w := workload(t, objs)
			podName := str(w, "metadata", "name") + "-0"
			if str(w, "kind") == "Deployment" {
				podName = str(w, "metadata", "name") + "-6d8f9c7b5d-x2k8q"
			}
			root := t.TempDir()
			path := podFiles(t, root, objs, w, c.secrets)
			for name, value := range podEnv(t, w, podName, c.secrets) {
				t.Setenv(name, value)
			}
			cfg, err := config.Load(path)
			if err != nil {
				t.Fatalf("crawlspace does not load the rendered configuration:\n%v", err)
			}
			if cfg.StateDir != "/state" {
				t.Errorf("state_dir = %q, want /state, the volume", cfg.StateDir)
			}
			ctr := container(t, mapAt(w, "spec", "template", "spec"))
			port := ""
			for _, p := range list(ctr, "ports") {
				if str(p.(map[string]any), "name") == "metrics" {
					port = fmt.Sprint(at(p.(map[string]any), "containerPort"))
				}
			}
			if cfg.MetricsAddr != ":"+port {
				t.Errorf("metrics_addr = %q, want every address on the container's metrics port %s", cfg.MetricsAddr, port)
			}
			switch str(w, "kind") {
			case "Deployment":
				if cfg.Cluster.StateIndex == "" || cfg.Cluster.NodeName != podName {
					t.Errorf("a process of the shared crawl: state_index %q, node_name %q; want its pod's name %q", cfg.Cluster.StateIndex, cfg.Cluster.NodeName, podName)
				}
			case "StatefulSet":
				if cfg.Cluster.StateIndex != "" {
					t.Errorf("the single process keeps its state in Elasticsearch (%s), not on its volume", cfg.Cluster.StateIndex)
				}
			}
		})
	}
}

// podEnv is the container's environment as the kubelet would give it: values, the pod's
// name, and the Secrets' keys.
func podEnv(t *testing.T, w map[string]any, podName string, secrets map[string]map[string]string) map[string]string {
	t.Helper()
	ctr := container(t, mapAt(w, "spec", "template", "spec"))
	env := map[string]string{}
	for _, e := range list(ctr, "envFrom") {
		name := str(e.(map[string]any), "secretRef", "name")
		s, ok := secrets[name]
		if !ok {
			t.Errorf("envFrom names Secret %q, which the release does not expect", name)
		}
		for k, v := range s {
			env[k] = v
		}
	}
	for _, e := range list(ctr, "env") {
		m := e.(map[string]any)
		name := str(m, "name")
		switch {
		case m["value"] != nil:
			env[name] = str(m, "value")
		case str(m, "valueFrom", "fieldRef", "fieldPath") == "metadata.name":
			env[name] = podName
		case str(m, "valueFrom", "secretKeyRef", "name") != "":
			sec, key := str(m, "valueFrom", "secretKeyRef", "name"), str(m, "valueFrom", "secretKeyRef", "key")
			v, ok := secrets[sec][key]
			if !ok {
				t.Errorf("variable %s comes from key %q of Secret %q, which the release does not expect", name, key, sec)
			}
			env[name] = v
		default:
			t.Errorf("variable %s: %v is no source the test knows", name, m)
		}
	}
	return env
}

// podFiles lays out under root the files the container sees through its ConfigMap and
// Secret mounts, and returns where the configuration is. In the configuration, the paths
// under those mounts are moved under root too; the volumes for writing are left out (the
// loader writes nothing).
func podFiles(t *testing.T, root string, objs []map[string]any, w map[string]any, secrets map[string]map[string]string) string {
	t.Helper()
	spec := mapAt(w, "spec", "template", "spec")
	volumes := map[string]map[string]any{}
	for _, v := range list(spec, "volumes") {
		volumes[str(v.(map[string]any), "name")] = v.(map[string]any)
	}
	configMaps := map[string]map[string]any{}
	for _, o := range objs {
		if str(o, "kind") == "ConfigMap" {
			configMaps[str(o, "metadata", "name")] = mapAt(o, "data")
		}
	}
	// Files of the ConfigMaps the release does not make, as an operator would give them.
	configMaps["site-ca"] = map[string]any{"ca.crt": caPEM}
	var moved []string
	for _, m := range list(container(t, spec), "volumeMounts") {
		mount := m.(map[string]any)
		dir := filepath.Join(root, str(mount, "mountPath"))
		vol := volumes[str(mount, "name")]
		var files map[string]string
		switch {
		case vol["secret"] != nil:
			name := str(vol, "secret", "secretName")
			s, ok := secrets[name]
			if !ok {
				t.Errorf("the pod mounts Secret %q, which the release does not expect", name)
			}
			files = keysToPaths(t, s, list(vol, "secret", "items"), "Secret "+name)
		case vol["configMap"] != nil:
			name := str(vol, "configMap", "name")
			data := map[string]string{}
			for k, v := range configMaps[name] {
				data[k] = fmt.Sprint(v)
			}
			files = keysToPaths(t, data, list(vol, "configMap", "items"), "ConfigMap "+name)
		default:
			continue
		}
		moved = append(moved, str(mount, "mountPath"))
		for p, content := range files {
			if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, p)), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(filepath.Join(dir, p), []byte(content), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	args := list(container(t, spec), "args")
	i := slices.Index(args, any("-config"))
	if i < 0 || i+1 >= len(args) {
		t.Fatalf("the container's args %v name no -config", args)
	}
	path := filepath.Join(root, fmt.Sprint(args[i+1]))
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the configuration the container reads is not in a mounted volume: %v", err)
	}
	text := string(data)
	for _, mp := range moved {
		text = strings.ReplaceAll(text, " "+mp+"/", " "+filepath.Join(root, mp)+"/")
	}
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// keysToPaths maps a Secret's or ConfigMap's keys to the files its volume shows: every key,
// or only the items named, at their paths.
func keysToPaths(t *testing.T, data map[string]string, items []any, what string) map[string]string {
	t.Helper()
	files := map[string]string{}
	if len(items) == 0 {
		for k, v := range data {
			files[k] = v
		}
		return files
	}
	for _, it := range items {
		key, p := str(it.(map[string]any), "key"), str(it.(map[string]any), "path")
		v, ok := data[key]
		if !ok {
			t.Errorf("%s has no key %q its volume asks for", what, key)
		}
		files[p] = v
	}
	return files
}

// workload is the release's one Deployment or StatefulSet.
func workload(t *testing.T, objs []map[string]any) map[string]any {
	t.Helper()
	var found []map[string]any
	for _, o := range objs {
		if k := str(o, "kind"); k == "Deployment" || k == "StatefulSet" {
			found = append(found, o)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d workloads rendered, want one", len(found))
	}
	return found[0]
}

// container is the crawlspace container of a pod spec.
func container(t *testing.T, spec map[string]any) map[string]any {
	t.Helper()
	for _, c := range list(spec, "containers") {
		if str(c.(map[string]any), "name") == "crawlspace" {
			return c.(map[string]any)
		}
	}
	t.Fatal("the pod has no container named crawlspace")
	return nil
}

// at follows keys down nested objects; nil where one is missing.
func at(v any, keys ...string) any {
	for _, k := range keys {
		m, ok := v.(map[string]any)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

func str(v any, keys ...string) string {
	s, _ := at(v, keys...).(string)
	return s
}

func mapAt(v any, keys ...string) map[string]any {
	m, _ := at(v, keys...).(map[string]any)
	return m
}

func list(v any, keys ...string) []any {
	l, _ := at(v, keys...).([]any)
	return l
}
