package frontier

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
)

const crashEnv = "FRONTIER_CRASH_CHILD_DIR"

const (
	crashHosts = 10
	crashBatch = 50
	// The kill comes once this batch is acknowledged, with the child busy.
	crashKillAfter = 25
)

func crashBatchItems(b int) []Item {
	items := make([]Item, crashBatch)
	for i := range items {
		items[i] = Item{
			URL:    fmt.Sprintf("http://h%d.test/b%d/%d", i%crashHosts, b, i),
			Source: "s",
			Class:  Class(i % int(numClasses)),
		}
	}
	return items
}

// TestCrashChild is the process the crash test kills: it queues batches,
// completes most leases and holds the others, reporting on stdout each
// change only once it is durable, and never stops on its own.
func TestCrashChild(t *testing.T) {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		t.Skip("run by TestCrashLosesNothingQueuedAndRefetchesNothingDone")
	}
	f, err := Open(dir, Options{Policy: policy(1000, 0)})
	if err != nil {
		fmt.Println("ERR", err)
		os.Exit(1)
	}
	for b := 0; ; b++ {
		if _, err := f.Add(crashBatchItems(b)...); err != nil {
			fmt.Println("ERR", err)
			os.Exit(1)
		}
		fmt.Println("A", b)
		// Complete concurrently, as crawl workers do, so the group commit
		// is what gets killed.
		var wg sync.WaitGroup
		for i := range 20 {
			l, _, err := f.TryNext()
			if err != nil || l == nil {
				break
			}
			if i%4 == 3 {
				fmt.Println("L", l.Item().URL)
				continue
			}
			wg.Go(func() {
				if err := l.Complete(Outcome{State: Fetched, Status: 200, Hash: "h"}); err != nil {
					fmt.Println("ERR", err)
					os.Exit(1)
				}
				fmt.Println("F", l.Item().URL)
			})
		}
		wg.Wait()
	}
}

func TestCrashLosesNothingQueuedAndRefetchesNothingDone(t *testing.T) {
	if os.Getenv(crashEnv) != "" {
		t.Skip("in the child")
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^TestCrashChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var (
		lastBatch = -1
		fetched   = map[string]bool{}
		leased    = map[string]bool{}
	)
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		kind, arg, _ := strings.Cut(sc.Text(), " ")
		switch kind {
		case "A":
			lastBatch, _ = strconv.Atoi(arg)
		case "F":
			fetched[arg] = true
		case "L":
			leased[arg] = true
		case "ERR":
			t.Fatalf("child: %s", arg)
		}
		// Kill it mid-way: it is busy adding, leasing and completing.
		if lastBatch == crashKillAfter {
			break
		}
	}
	cmd.Process.Signal(syscall.SIGKILL)
	go func() {
		for sc.Scan() { // drain so the child cannot block on a full pipe
		}
	}()
	cmd.Wait()
	if lastBatch < crashKillAfter {
		t.Fatalf("child stopped early after batch %d: %v", lastBatch, sc.Err())
	}
	if len(leased) == 0 || len(fetched) == 0 {
		t.Fatalf("child reported %d leased and %d fetched", len(leased), len(fetched))
	}

	f := openTest(t, dir, Options{Policy: policy(1000, 0)})
	waiting := map[string]bool{}
	for b := 0; ; b++ {
		present := 0
		for _, it := range crashBatchItems(b) {
			r, ok, err := f.Get(it.URL)
			if err != nil {
				t.Fatal(err)
			}
			if !ok {
				if b <= lastBatch {
					t.Errorf("%s was queued (batch %d acknowledged) and is lost", it.URL, b)
				}
				continue
			}
			present++
			switch {
			case fetched[it.URL] && r.State != Fetched:
				t.Errorf("%s was completed and is now %s", it.URL, r.State)
			case leased[it.URL] && r.State != Waiting:
				t.Errorf("%s was in flight at the kill and is now %s, want waiting", it.URL, r.State)
			case r.State != Fetched && r.State != Waiting:
				t.Errorf("%s is %s", it.URL, r.State)
			case r.State == Waiting:
				waiting[it.URL] = true
			}
		}
		if present != 0 && present != crashBatch {
			t.Errorf("batch %d is half there (%d of %d URLs): Add is not atomic", b, present, crashBatch)
		}
		if present == 0 && b > lastBatch {
			break
		}
	}
	// Every waiting URL, and only those, is leased exactly once.
	var leases []*lease
	for {
		l, _, err := f.TryNext()
		if l == nil || err != nil {
			break
		}
		u := l.Item().URL
		if !waiting[u] {
			t.Errorf("leased %s, which is not waiting (fetched before the crash, or twice)", u)
		}
		delete(waiting, u)
		leases = append(leases, l)
	}
	if len(waiting) != 0 {
		t.Errorf("%d waiting URLs were never leased after the restart", len(waiting))
	}
	var wg sync.WaitGroup
	for _, l := range leases {
		wg.Go(func() { l.Complete(Outcome{State: Fetched}) })
	}
	wg.Wait()
	if _, _, err := f.TryNext(); err != ErrDone {
		t.Errorf("after completing every lease: %v, want ErrDone", err)
	}
	t.Logf("killed after batch %d: %d completed, %d in flight", lastBatch, len(fetched), len(leased))
}
