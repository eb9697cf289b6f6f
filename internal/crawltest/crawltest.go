// Package crawltest builds configs and crawlers for tests the way
// `crawlspace crawl` does, so the provider, monitor and command tests share
// one setup.
package crawltest

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
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
	return NewLogged(t, cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
}

// NewLogged is New with the crawler logging to log, for tests that read
// what it logs.
func NewLogged(t testing.TB, cfg *config.Config, log *slog.Logger) *provider.Crawler {
	t.Helper()
	set, err := rules.Compile(cfg)
	if err != nil {
		t.Fatalf("rules:\n%v", err)
	}
	c, err := provider.New(cfg, set, sink.Opener(context.Background(), cfg), log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// WriteConfig writes yaml to crawlspace.yaml in a temp dir and returns the
// file's path. Unless yaml names a state_dir, one is added in that temp dir,
// so tests do not share state.
func WriteConfig(t testing.TB, yaml string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "crawlspace.yaml")
	if !strings.Contains(yaml, "\nstate_dir:") {
		yaml = "state_dir: " + filepath.Join(dir, "state") + "\n" + yaml
	}
	if err := os.WriteFile(path, []byte(yaml), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// Config writes yaml as WriteConfig does and loads it the way crawlspace
// does, so every default is set and every value checked.
func Config(t testing.TB, yaml string) *config.Config {
	t.Helper()
	cfg, err := config.Load(WriteConfig(t, yaml))
	if err != nil {
		t.Fatalf("config:\n%v", err)
	}
	return cfg
}
