package estest

import (
	"testing"

	"github.com/crawlspace/crawlspace/internal/faultproxy"
)

// Proxy starts a fault-injection proxy in front of the node (see package
// faultproxy), passing every request until the test sets a fault; it is
// closed when the test ends.
func Proxy(t testing.TB) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.New(URL(t))
	if err != nil {
		t.Fatalf("fault proxy: %v", err)
	}
	t.Cleanup(p.Close)
	return p
}

// SetFault switches the proxy's fault, failing the test if it cannot.
func SetFault(t testing.TB, p *faultproxy.Proxy, f faultproxy.Fault) {
	t.Helper()
	if err := p.Set(f); err != nil {
		t.Fatal(err)
	}
}
