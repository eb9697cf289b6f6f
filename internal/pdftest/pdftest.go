// Package pdftest readies PDFium for tests whose processes read PDFs through the crawler's
// reader: it compiles PDFium once into a cache directory before the tests run, in a helper
// process built without the race detector.
package pdftest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// Warm compiles PDFium into dir (pdf.DefaultCacheDir for the crawler's reader, or the directory a
// test's Config names), where the calling test binary and its worker processes find it. On a
// machine whose cache was empty every worker started before that compiled PDFium again, which
// under the race detector and a loaded machine took longer than the tests' documents.timeout:
// their PDFs failed as extract_timeout.
//
// The compile runs in a helper (package warm) that go build makes in the test build's
// configuration less the race detector: wazero's compiler instrumented for races took 38
// CPU-seconds for PDFium where the helper takes about 5. wazero keeps compiled code per wazero
// version as its module reads it from the binary's build information, which a test binary of a
// package that is not main lacks ("dev"), so the helper is linked with the caller's. Test
// binaries that warm the same directory at the same moment take turns on a lock file in it. It
// does nothing where dir is empty or go cannot build the helper; a failure is the tests' to find.
func Warm(dir string) {
	if dir == "" || os.MkdirAll(dir, 0o755) != nil {
		return
	}
	_, here, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(here), "..", "..")
	sample := filepath.Join(root, "document", "pdf", "testdata", "cnfsat.pdf")
	goBin, err := exec.LookPath("go")
	if err != nil {
		return
	}
	lock, err := os.OpenFile(filepath.Join(dir, ".warm.lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return
	}
	defer lock.Close()
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return
	}
	tmp, err := os.MkdirTemp("", "pdftest-warm-")
	if err != nil {
		return
	}
	defer os.RemoveAll(tmp)
	bin := filepath.Join(tmp, "warm")
	args := []string{"build", "-o", bin, "-ldflags=-X=github.com/tetratelabs/wazero/internal/version.version=" + wazeroVersion()}
	env := os.Environ()
	if raceEnabled {
		// scripts/build's configuration, whose compiles scripts/test's go vet made: the helper
		// then costs a link.
		args = append(args, "-trimpath")
		env = append(env, "CGO_ENABLED=0")
	}
	build := exec.Command(goBin, append(args, "./internal/pdftest/warm")...)
	build.Dir, build.Env = root, env
	if out, err := build.CombinedOutput(); err != nil {
		os.Stderr.Write(out)
		return
	}
	run := exec.Command(bin, dir, sample)
	run.Stdout, run.Stderr = os.Stderr, os.Stderr
	_ = run.Run()
}

// wazeroVersion is the version wazero finds in this binary's build information, as its
// internal/version.GetWazeroVersion reads it: the dependency's, the main module's, or "dev".
func wazeroVersion() string {
	missing := func(v string) bool { return v == "" || v == "(devel)" }
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "dev"
	}
	v := ""
	for _, dep := range info.Deps {
		if strings.Contains(dep.Path, "github.com/tetratelabs/wazero") {
			v = dep.Version
		}
	}
	if missing(v) {
		v = info.Main.Version
	}
	if missing(v) {
		return "dev"
	}
	return v
}
