package main

import (
	"debug/buildinfo"
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
	// scripts/build's configuration (static, -trimpath), which scripts/test's vet compiled already.
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-buildvcs=auto", "-ldflags", "-X main.version=v1.2.3-test", "-o", bin, ".")
	build.Env = append(os.Environ(), "GOFLAGS=", "CGO_ENABLED=0")
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
	// Where the build recorded version control information (a git
	// checkout, and go recognises it: not a linked worktree, nor a
	// GOFLAGS=-buildvcs=false in go env), the line names its commit.
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	var recorded string
	for _, s := range info.Settings {
		if s.Key == "vcs.revision" {
			recorded = s.Value
		}
	}
	if recorded == "" {
		t.Log("the build recorded no version control information: the commit is not checked")
		return
	}
	if m[4] != recorded || m[5] == "" {
		t.Errorf("crawlspace version = %q, want commit %s and its time", line, recorded)
	}
}

// The revision and date stamped by scripts/build win over what Go
// recorded: a build from a source archive records nothing, and a
// reproducible build stamps SOURCE_DATE_EPOCH, not the commit's time.
func TestVersionLinePrintsTheStampedRevisionAndDate(t *testing.T) {
	defer func(v, r, d string) { version, revision, buildDate = v, r, d }(version, revision, buildDate)
	version, revision, buildDate = "v1.2.3", strings.Repeat("ab", 20), "2023-11-14T22:13:20Z"
	m := versionFormat.FindStringSubmatch(versionLine())
	if m == nil {
		t.Fatalf("version line %q does not match %s", versionLine(), versionFormat)
	}
	if m[1] != "v1.2.3" || m[4] != revision || m[5] != buildDate || m[6] != "" {
		t.Errorf("version line %q, want v1.2.3, commit %s %s, not modified", versionLine(), revision, buildDate)
	}
}
