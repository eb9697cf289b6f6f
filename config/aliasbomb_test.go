package config

import (
	"fmt"
	"runtime"
	"strings"
	"testing"
)

// nested writes anchors x-l0 .. x-l<levels>, each a list of nine aliases
// of the one before, x-l0 being leaf: 9^levels leaves once expanded.
func nested(leaf string, levels int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "x-l0: &l0 %s\n", leaf)
	for i := 1; i <= levels; i++ {
		fmt.Fprintf(&b, "x-l%d: &l%d [%s*l%d]\n", i, i, strings.Repeat(fmt.Sprintf("*l%d, ", i-1), 8), i-1)
	}
	return b.String()
}

// allocated is what parsing src allocates, in bytes: loading a file is
// bounded in memory and work whatever its aliases expand to.
func allocated(t *testing.T, src string) (uint64, []string) {
	t.Helper()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	got := errs(t, src)
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc, got
}

// A billion-laughs file built of merge keys (<<: *a, where *a is a list
// of lists of lists ... of a scalar) reaches the same bad value 9^8 times,
// each time at the same key path: it is one error, said once.
func TestAMergeKeyAliasBombIsEachDistinctErrorOnce(t *testing.T) {
	src := nested("[x]", 8) + minimal + "    politeness: {<<: *l8}\n"
	n, got := allocated(t, src)
	seen := map[string]bool{}
	merge, repeated := 0, 0
	for _, e := range got {
		if seen[e] {
			repeated++
		}
		seen[e] = true
		if strings.Contains(e, "a merge key (<<) takes a mapping") {
			merge++
		}
	}
	if repeated > 0 {
		t.Errorf("%d errors said again", repeated)
	}
	if merge != 1 || len(got) > 2 {
		t.Errorf("%d errors, %d about the merge key, want that one (and the expansion's bound):\n%s", len(got), merge, strings.Join(got[:min(len(got), 5)], "\n"))
	}
	if n > 256<<20 {
		t.Errorf("parsing a 400-byte file allocated %d MiB", n>>20)
	}
}

// A long value repeated by aliases is bounded by its bytes, not only by
// the count of values: a thousand aliases of a 1 MiB pattern would be a
// gigabyte of patterns to check.
func TestAliasesRepeatingALongValueAreBoundedInBytes(t *testing.T) {
	long := "/" + strings.Repeat("a", 1<<20)
	src := "x-long: &long " + long + "\n" + minimal + "    exclude: [" + strings.Repeat("*long, ", 999) + "*long]\n"
	n, got := allocated(t, src)
	if len(got) != 1 || !strings.Contains(got[0], "c.yaml:5:") || !strings.Contains(got[0], "expands to more than") {
		t.Errorf("errors (%d):\n%s\nwant one about the expansion", len(got), strings.Join(got[:min(len(got), 3)], "\n"))
	}
	if n > 256<<20 {
		t.Errorf("parsing a 1 MiB file allocated %d MiB", n>>20)
	}
}
