package packaging

import (
	"bufio"
	"crypto/sha256"
	"debug/buildinfo"
	"debug/elf"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the checkout, from this package's folder.
const repoRoot = "../.."

// testVersion is the release the tests build, for this machine's
// architecture only (scripts/release cross-compiles arm64 the same way).
const testVersion = "v0.0.0-test.1"

// SOURCE_DATE_EPOCH for the test's release, as a reproducible build sets
// it: a date no commit of the project has, so the tests see the stamp
// rather than the commit time Go records on its own.
const (
	testEpoch = "1700000000"
	testDate  = "2023-11-14T22:13:20Z"
)

var arch = runtime.GOARCH

var (
	releaseOnce sync.Once
	released    struct {
		dir string
		out []byte
		err error
	}
)

func TestMain(m *testing.M) {
	code := m.Run()
	if released.dir != "" {
		os.RemoveAll(filepath.Dir(released.dir))
	}
	os.Exit(code)
}

// releaseDir runs scripts/release once per test binary and returns its
// folder. Where the script cannot install what it needs (exit 3: no root
// or no apt-get) the test skips, and fails under CI.
func releaseDir(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("-short: builds the release and its image (scripts/release)")
	}
	releaseOnce.Do(func() {
		tmp, err := os.MkdirTemp("", "crawlspace-release-")
		if err != nil {
			released.err = err
			return
		}
		released.dir = filepath.Join(tmp, "out")
		cmd := exec.Command("scripts/release", "-arch", arch, "-allow-dirty", "-o", released.dir, testVersion)
		cmd.Dir = repoRoot
		cmd.Env = append(os.Environ(), "SOURCE_DATE_EPOCH="+testEpoch)
		start := time.Now()
		released.out, released.err = cmd.CombinedOutput()
		t.Logf("scripts/release -arch %s took %s", arch, time.Since(start).Round(100*time.Millisecond))
	})
	if released.err != nil {
		var exit *exec.ExitError
		if errors.As(released.err, &exit) && exit.ExitCode() == 3 {
			skipOrFail(t, "scripts/release cannot install what it needs here (root and apt-get): %s", released.out)
		}
		t.Fatalf("scripts/release: %v\n%s", released.err, released.out)
	}
	return released.dir
}

// skipOrFail skips a test whose tools this machine lacks, and fails it
// under CI (CI set to anything but false, 0 or no): a CI run must not
// pass by skipping.
func skipOrFail(t *testing.T, format string, args ...any) {
	t.Helper()
	switch strings.ToLower(os.Getenv("CI")) {
	case "", "0", "false", "no":
		t.Skipf(format, args...)
	}
	t.Fatalf(format, args...)
}

func releasedBinary(t *testing.T) string {
	return filepath.Join(releaseDir(t), "crawlspace-"+testVersion+"-linux-"+arch)
}

func gitHead(t *testing.T) string {
	t.Helper()
	cmd := exec.Command("git", "rev-parse", "HEAD")
	cmd.Dir = repoRoot
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git rev-parse HEAD: %v", err)
	}
	return strings.TrimSpace(string(out))
}

func TestReleasedBinaryIsStaticAndPrintsItsStamps(t *testing.T) {
	t.Parallel()
	bin := releasedBinary(t)
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for k, v := range map[string]string{"CGO_ENABLED": "0", "-trimpath": "true", "GOOS": "linux", "GOARCH": arch} {
		if settings[k] != v {
			t.Errorf("built with %s=%q, want %q", k, settings[k], v)
		}
	}
	f, err := elf.Open(bin)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("links %v: not static", libs)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Error("has a program interpreter: not static")
		}
	}

	out, err := exec.Command(bin, "version").Output()
	if err != nil {
		t.Fatalf("%s version: %v", bin, err)
	}
	// A checkout with uncommitted changes (-allow-dirty) adds " modified".
	line := strings.TrimSuffix(strings.TrimSuffix(string(out), "\n"), " modified")
	want := fmt.Sprintf("crawlspace %s %s linux/%s commit %s %s", testVersion, runtime.Version(), arch, gitHead(t), testDate)
	if line != want {
		t.Errorf("crawlspace version printed\n %q\nwant the stamps\n %q", out, want)
	}
}

func TestReleaseChecksumsCoverEveryArtefact(t *testing.T) {
	t.Parallel()
	dir := releaseDir(t)
	sums, err := os.Open(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	listed := map[string]string{}
	line := regexp.MustCompile(`^([0-9a-f]{64})  (\S+)$`) // sha256sum's text mode
	sc := bufio.NewScanner(sums)
	for sc.Scan() {
		m := line.FindStringSubmatch(sc.Text())
		if m == nil {
			t.Fatalf("SHA256SUMS line %q is not sha256sum's", sc.Text())
		}
		if _, dup := listed[m[2]]; dup {
			t.Errorf("%s listed twice", m[2])
		}
		listed[m[2]] = m[1]
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		if e.Name() == "SHA256SUMS" {
			continue
		}
		files = append(files, e.Name())
		sum, ok := listed[e.Name()]
		if !ok {
			t.Errorf("%s is not in SHA256SUMS", e.Name())
			continue
		}
		if got := fileSHA256(t, filepath.Join(dir, e.Name())); got != sum {
			t.Errorf("%s: SHA-256 %s, SHA256SUMS says %s", e.Name(), got, sum)
		}
		delete(listed, e.Name())
	}
	for name := range listed {
		t.Errorf("SHA256SUMS lists %s, which is not there", name)
	}
	stem := "crawlspace-" + testVersion + "-linux-" + arch
	want := []string{stem, stem + ".cdx.json", stem + ".oci.tar"}
	if !slices.Equal(files, want) {
		t.Errorf("the release holds %v, want %v", files, want)
	}
}

func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// cycloneDX is what the tests read of a CycloneDX JSON document.
type cycloneDX struct {
	BOMFormat    string `json:"bomFormat"`
	SpecVersion  string `json:"specVersion"`
	SerialNumber string `json:"serialNumber"`
	Version      int    `json:"version"`
	Metadata     struct {
		Timestamp string       `json:"timestamp"`
		Component cdxComponent `json:"component"`
	} `json:"metadata"`
	Components   []cdxComponent `json:"components"`
	Dependencies []struct {
		Ref       string   `json:"ref"`
		DependsOn []string `json:"dependsOn"`
	} `json:"dependencies"`
}

type cdxComponent struct {
	BOMRef  string `json:"bom-ref"`
	Type    string `json:"type"`
	Name    string `json:"name"`
	Version string `json:"version"`
	PURL    string `json:"purl"`
	Hashes  []struct {
		Alg     string `json:"alg"`
		Content string `json:"content"`
	} `json:"hashes"`
}

func (c cdxComponent) sha256() string {
	for _, h := range c.Hashes {
		if h.Alg == "SHA-256" {
			return h.Content
		}
	}
	return ""
}

// The bill lists exactly the modules the binary records it was linked
// with, each with the hash go.sum holds for it, and its graph names only
// what it lists.
func TestReleaseSBOMListsTheModulesLinkedIntoTheBinary(t *testing.T) {
	t.Parallel()
	bin := releasedBinary(t)
	raw, err := os.ReadFile(bin + ".cdx.json")
	if err != nil {
		t.Fatal(err)
	}
	var bom cycloneDX
	if err := json.Unmarshal(raw, &bom); err != nil {
		t.Fatalf("SBOM is not JSON: %v", err)
	}
	if bom.BOMFormat != "CycloneDX" || bom.SpecVersion != "1.6" || bom.Version != 1 {
		t.Errorf("bomFormat %q, specVersion %q, version %d: want CycloneDX 1.6, version 1", bom.BOMFormat, bom.SpecVersion, bom.Version)
	}
	if !regexp.MustCompile(`^urn:uuid:[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`).MatchString(bom.SerialNumber) {
		t.Errorf("serialNumber %q is not a urn:uuid", bom.SerialNumber)
	}
	if _, err := time.Parse(time.RFC3339, bom.Metadata.Timestamp); err != nil {
		t.Errorf("metadata.timestamp: %v", err)
	}
	main := bom.Metadata.Component
	if main.Type != "application" || main.Name != "github.com/crawlspace/crawlspace" || main.Version != testVersion ||
		!strings.HasPrefix(main.PURL, "pkg:golang/github.com/crawlspace/crawlspace@"+testVersion) {
		t.Errorf("metadata.component = %+v, want the application github.com/crawlspace/crawlspace %s", main, testVersion)
	}

	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{} // path@version: the h1 hash in hex
	for _, d := range info.Deps {
		if d.Replace != nil {
			d = d.Replace
		}
		sum, ok := strings.CutPrefix(d.Sum, "h1:")
		if !ok {
			t.Fatalf("module %s@%s has no h1 sum (%q)", d.Path, d.Version, d.Sum)
		}
		b, err := base64.StdEncoding.DecodeString(sum)
		if err != nil {
			t.Fatal(err)
		}
		want[d.Path+"@"+d.Version] = hex.EncodeToString(b)
	}
	refs := map[string]bool{main.BOMRef: true}
	for _, c := range bom.Components {
		key := c.Name + "@" + c.Version
		if refs[c.BOMRef] {
			t.Errorf("bom-ref %q twice", c.BOMRef)
		}
		refs[c.BOMRef] = true
		if c.Type != "library" || !strings.HasPrefix(c.PURL, "pkg:golang/") {
			t.Errorf("component %s: type %q, purl %q", key, c.Type, c.PURL)
		}
		sum, ok := want[key]
		if !ok {
			t.Errorf("component %s is not linked into the binary", key)
			continue
		}
		if c.sha256() != sum {
			t.Errorf("component %s: SHA-256 %q, go.sum's h1 is %s", key, c.sha256(), sum)
		}
		delete(want, key)
	}
	for key := range want {
		t.Errorf("module %s is linked into the binary and missing from the SBOM", key)
	}
	if len(bom.Dependencies) == 0 {
		t.Error("no dependency graph")
	}
	for _, d := range bom.Dependencies {
		for _, r := range append([]string{d.Ref}, d.DependsOn...) {
			if !refs[r] {
				t.Errorf("dependencies name %q, which is no component", r)
			}
		}
	}
}
