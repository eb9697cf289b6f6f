// Package crawltest builds crawlers for tests the way `crawlspace crawl`
// does, so the provider, monitor and command tests share one setup.
package crawltest

import (
	"context"
	"io"
	"log/slog"
	"testing"

	"github.com/crawlspace/crawlspace/config"
	"github.com/crawlspace/crawlspace/provider"
	"github.com/crawlspace/crawlspace/rules"
	"github.com/crawlspace/crawlspace/sink"
)

// New compiles cfg's crawl space and opens a crawler into the sink cfg
// names, logging nowhere; it is closed when the test ends.
func New(t testing.TB, cfg *config.Config) *provider.Crawler {
	t.Helper()
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatalf("rules:\n%v", err)
	}
	c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
