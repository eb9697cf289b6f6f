package main

import (
	"bytes"
	"compress/gzip"
	"io"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
	"time"
)

func TestHeapProfileIsRewrittenWhileTheCommandRuns(t *testing.T) {
	path := filepath.Join(t.TempDir(), "heap.prof")
	tick, done, stopped := make(chan time.Time), make(chan struct{}), make(chan struct{})
	go func() { writeHeapProfilesOn(path, tick, done); close(stopped) }()
	// The second tick is taken once the first one's profile is written.
	tick <- time.Time{}
	tick <- time.Time{}
	close(done)
	<-stopped
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// A pprof profile is a gzipped protocol buffer naming its sample types.
	zr, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("the file is no profile: %v", err)
	}
	pb, err := io.ReadAll(zr)
	if err != nil || !bytes.Contains(pb, []byte("inuse_space")) {
		t.Errorf("the profile (%d bytes, %v) does not hold inuse_space samples", len(pb), err)
	}
	if _, err := os.Stat(path + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the temporary file was left behind: %v", err)
	}
}

func TestGarbageCollectorKeepsTheHeapUnder384MiBUnlessTheEnvironmentSaysOtherwise(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	t.Setenv("GOGC", "")
	t.Setenv("GOMEMLIMIT", "")
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != 384<<20 {
		t.Errorf("memory limit %d, want 384 MiB", got)
	}
	if got := debug.SetGCPercent(400); got != 400 {
		t.Errorf("GOGC %d, want 400", got)
	}
	debug.SetMemoryLimit(math.MaxInt64)
	t.Setenv("GOMEMLIMIT", "2GiB")
	tuneGC()
	if got := debug.SetMemoryLimit(-1); got != math.MaxInt64 {
		t.Errorf("with GOMEMLIMIT set, tuneGC changed the limit to %d", got)
	}
}
