package office

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/crawlspace/crawlspace/document"
	"github.com/crawlspace/crawlspace/internal/hostile"
)

// hostileFiles are the files the memory tests read, by name: each packs
// into a few hundred kilobytes (the relationships and property names
// into some 5 MB) what a reader without bounds held at 150 to 760 MiB.
var hostileFiles = map[string]func() []byte{
	"docx-text-250MiB":       func() []byte { return hostile.DocxTextRun(250 << 20) },
	"docx-attr-250MiB":       func() []byte { return hostile.DocxAttribute(250 << 20) },
	"xlsx-4Mi-strings":       func() []byte { return hostile.XlsxSharedStrings(4 << 20) },
	"docx-1Mi-relations":     func() []byte { return hostile.DocxRelationships(1 << 20) },
	"docx-1Mi-propertynames": func() []byte { return hostile.DocxPropertyNames(1 << 20) },
}

// perFile is what one hostile file may cost a read at most: twelve times
// the default token bound, six times what a reader may keep beside the
// body. A bounded read takes 7 to 52 MiB of it, a read without bounds took
// 150 to 760 MiB.
const perFile = 96 << 20

// memoryEnv asks the test binary, run as a child, to read copies of one
// hostile file, a number of them at a time, and print how far its resident
// set grew and what each read gave.
const memoryEnv = "CRAWLSPACE_TEST_OFFICE_MEMORY"

// procStatus is a field of /proc/self/status in bytes.
func procStatus(field string) (int64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(l, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/self/status", field)
}

func TestReadMemoryChild(t *testing.T) {
	spec := os.Getenv(memoryEnv)
	if spec == "" {
		t.Skip("run by the memory tests, in a process of its own")
	}
	var name string
	var copies, parallel int
	if _, err := fmt.Sscanf(spec, "%s %d %d", &name, &copies, &parallel); err != nil || hostileFiles[name] == nil {
		t.Fatalf("%s=%q: %v", memoryEnv, spec, err)
	}
	data := hostileFiles[name]()
	runtime.GC()
	debug.FreeOSMemory()
	base, err := procStatus("VmRSS")
	if err != nil {
		t.Fatal(err)
	}
	// Writing 5 sets the peak to the resident set now: building the file
	// is not the read's cost. Where the kernel refuses, the peak includes
	// it, which only errs high.
	os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	results := make([]string, copies)
	sem := make(chan struct{}, parallel)
	var wg sync.WaitGroup
	for i := range copies {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			// The reader goes by the bytes, whatever kind it is asked for.
			c, err := NewReader(DOCX).Read(context.Background(), data, document.Limits{})
			if err != nil {
				results[i] = document.ReasonOf(err) + " " + err.Error()
			} else {
				results[i] = fmt.Sprintf("ok %q", c.Body[:min(len(c.Body), 64)])
			}
		}()
	}
	wg.Wait()
	peak, err := procStatus("VmHWM")
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("office-memory %d %d\n", len(data), peak-base)
	for _, r := range results {
		fmt.Printf("office-result %s\n", r)
	}
}

// childBinary is the test binary the memory tests run as a child: this
// one, or under the race detector, whose shadow memory triples a resident
// set and whose checks slow the decoder twentyfold, a build of this
// package without it.
func childBinary(t *testing.T) string {
	t.Helper()
	if _, err := procStatus("VmHWM"); err != nil {
		t.Skipf("the memory a read takes is read from /proc/self/status: %v", err)
	}
	if !raceDetector {
		return os.Args[0]
	}
	bin := filepath.Join(t.TempDir(), "office.test")
	// In scripts/build's configuration (static, -trimpath), whose compiles scripts/test's vet made.
	build := exec.Command("go", "test", "-c", "-trimpath", "-o", bin, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the tests without the race detector: %v\n%s", err, out)
	}
	return bin
}

// readGrowth reads copies of the named hostile file, parallel at a time,
// in a child process of bin, and is how far the child's resident set grew
// over the reads, with what each read gave: "ok" and the start of the
// body, or the reason and the error.
func readGrowth(t *testing.T, bin, name string, copies, parallel int) (int64, []string) {
	t.Helper()
	cmd := exec.Command(bin, "-test.run=^TestReadMemoryChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%s %d %d", memoryEnv, name, copies, parallel))
	out, err := cmd.CombinedOutput()
	i := bytes.Index(out, []byte("office-memory "))
	if err != nil || i < 0 {
		t.Fatalf("child reading %s: %v:\n%s", name, err, out)
	}
	var size, grew int64
	if _, err := fmt.Sscanf(string(out[i:]), "office-memory %d %d", &size, &grew); err != nil {
		t.Fatalf("child reading %s: %v:\n%s", name, err, out)
	}
	var results []string
	for _, l := range strings.Split(string(out), "\n") {
		if r, ok := strings.CutPrefix(l, "office-result "); ok {
			results = append(results, r)
		}
	}
	t.Logf("%d of %s (%d KiB) read %d at a time: the resident set grew by %d MiB; first result: %s",
		copies, name, size>>10, parallel, grew>>20, results[0])
	return grew, results
}

// Hostile files cost a read a few times the bound that stops them, not
// what they pack, each in a process of its own so that none sees what
// another left. Each case names the file, how many copies are read how
// many at a time, what each read gives, and the memory all of them may
// take.
func TestHostileFilesCostTheirBoundsNotWhatTheyPack(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: reads each hostile file in a child process, ten seconds")
	}
	bin := childBinary(t)
	for _, c := range []struct {
		about            string
		file             string
		copies, parallel int
		want             []string
	}{
		// One text run or attribute of 250 MiB in a docx of 256 KB is
		// too_large at the token bound.
		{"one huge text run", "docx-text-250MiB", 1, 1, []string{"too_large ", "word/document.xml", "XML token"}},
		{"one huge attribute", "docx-attr-250MiB", 1, 1, []string{"too_large ", "word/document.xml", "XML token"}},
		// Eight of them four at a time cost four reads at most.
		{"eight huge runs four at a time", "docx-text-250MiB", 8, 4, []string{"too_large "}},
		// A string table of 4 million entries is read as far as its
		// budget: the workbook is indexed, the cell whose string lies
		// past it is empty.
		{"4 million shared strings", "xlsx-4Mi-strings", 1, 1, []string{`ok "S\nfirst"`}},
		// A million relationships pass what a reader may keep; a million
		// property names cost the few properties read.
		{"a million relationships", "docx-1Mi-relations", 1, 1, []string{"too_large ", "word/_rels/document.xml.rels"}},
		{"a million property names", "docx-1Mi-propertynames", 1, 1, []string{`ok "before\nx"`}},
	} {
		t.Run(c.about, func(t *testing.T) {
			grew, results := readGrowth(t, bin, c.file, c.copies, c.parallel)
			for _, r := range results {
				for _, w := range c.want {
					if !strings.Contains(r, w) {
						t.Errorf("%s; want %q", r, w)
					}
				}
			}
			if bound := int64(c.parallel) * perFile; grew > bound {
				t.Errorf("the reads took %d MiB, more than %d MiB", grew>>20, bound>>20)
			}
		})
	}
}
