package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"
)

// versionFormat is `crawlspace version`'s documented line.
var versionFormat = regexp.MustCompile(`^crawlspace (\S+) (go\S+) (\S+/\S+)(?: commit ([0-9a-f]{40})(?: (\S+))?( modified)?)?$`)

func TestVersionLineWithoutBuildStampsSaysDevel(t *testing.T) {
	m := versionFormat.FindStringSubmatch(versionLine())
	if m == nil {
		t.Fatalf("version line %q does not match %s", versionLine(), versionFormat)
	}
	if m[1] != "devel" || m[2] != runtime.Version() || m[3] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("version line %q", versionLine())
	}
	if buildVersion() != "devel" {
		t.Errorf("buildVersion() = %q", buildVersion())
	}
}

func TestVersionCommandPrintsTheStampedVersionAndCommit(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary")
	}
	bin := filepath.Join(t.TempDir(), "crawlspace")
	build := exec.CommandContext(t.Context(), "go", "build", "-buildvcs=auto", "-ldflags", "-X main.version=v1.2.3-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	out, err := exec.CommandContext(t.Context(), bin, "version").Output()
	if err != nil {
		t.Fatalf("crawlspace version: %v", err)
	}
	line := strings.TrimSuffix(string(out), "\n")
	m := versionFormat.FindStringSubmatch(line)
	if m == nil || strings.Contains(line, "\n") {
		t.Fatalf("crawlspace version printed %q, want one line matching %s", out, versionFormat)
	}
	if m[1] != "v1.2.3-test" || m[3] != runtime.GOOS+"/"+runtime.GOARCH {
		t.Errorf("crawlspace version = %q, want the -X main.version stamp", line)
	}
	// In a git checkout the build records the commit.
	head, err := exec.CommandContext(t.Context(), "git", "rev-parse", "HEAD").Output()
	if err != nil {
		t.Logf("no git checkout (%v): the commit is not checked", err)
		return
	}
	if m[4] != strings.TrimSpace(string(head)) || m[5] == "" {
		t.Errorf("crawlspace version = %q, want commit %s and its time", line, head)
	}
}
