// The Helm chart's tests, a module of their own so that the crawler's module needs no Kubernetes
// or Helm packages: scripts/test runs them (docs/kubernetes.md).
module github.com/crawlspace/crawlspace/deploy/helm/test

go 1.26.0

require (
	github.com/crawlspace/crawlspace v0.0.0
	github.com/santhosh-tekuri/jsonschema/v6 v6.0.3
	sigs.k8s.io/yaml v1.6.0
)

require (
	github.com/andybalholm/cascadia v1.3.3 // indirect
	go.etcd.io/bbolt v1.5.0 // indirect
	go.yaml.in/yaml/v2 v2.4.2 // indirect
	golang.org/x/net v0.62.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
	golang.org/x/text v0.43.0 // indirect
	gopkg.in/yaml.v3 v3.0.1 // indirect
)

replace github.com/crawlspace/crawlspace => ../../..
