package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// proc is a crawlspace command running in a child process of the test
// binary (TestMain turns it into crawlspace), its output collected.
type proc struct {
	name string
	cmd  *exec.Cmd
	out  *lockedBuffer
	// done is closed once the process has exited; cmd.ProcessState then
	// holds its exit code.
	done chan struct{}
}

// startProc starts crawlspace with args in a child process; a child still
// running when the test ends is killed.
func startProc(t *testing.T, name string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	env, _ := json.Marshal(args)
	cmd.Env = append(os.Environ(), commandEnv+"="+string(env))
	p := &proc{name: name, cmd: cmd, out: &lockedBuffer{}, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = p.out, p.out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-p.done
	})
	return p
}

// exitCode is the process's exit code, -1 while it runs or when a signal
// ended it.
func (p *proc) exitCode() int {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode()
	default:
		return -1
	}
}

// outputs are the outputs of ps, one after the other, for a failure message.
func outputs(ps ...*proc) string {
	var sb strings.Builder
	for _, p := range ps {
		fmt.Fprintf(&sb, "\n--- process %s:\n%s", p.name, p.out)
	}
	return sb.String()
}

// nearDeadline is closed shortly before go test's -timeout, never without
// one: the tests of processes have no time limit of their own, but a hang
// is reported with the processes' goroutines rather than by go test's
// panic, which would kill them unheard.
func nearDeadline(t *testing.T) <-chan time.Time {
	if d, ok := t.Deadline(); ok {
		return time.After(time.Until(d) - time.Minute)
	}
	return nil
}

// awaitExit waits for every process of ps to exit. Shortly before go
// test's -timeout, those still running are made to dump their goroutines
// (SIGQUIT) and the test fails with state (what the processes were
// waited for, as it stands then) and every process's output.
func awaitExit(t *testing.T, state func() string, ps ...*proc) {
	t.Helper()
	deadline := nearDeadline(t)
	for _, p := range ps {
		select {
		case <-p.done:
		case <-deadline:
			hung(t, "process "+p.name+" had not exited", state, ps)
		}
	}
}

// waitUntil polls cond until it holds, or fails as awaitExit does shortly
// before go test's -timeout.
func waitUntil(t *testing.T, cond func() bool, state func() string, ps ...*proc) {
	t.Helper()
	deadline := nearDeadline(t)
	for !cond() {
		select {
		case <-deadline:
			hung(t, "the processes had not got there", state, ps)
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// hung makes the processes of ps dump their goroutines and fails the test
// with what and state, and their output.
func hung(t *testing.T, what string, state func() string, ps []*proc) {
	t.Helper()
	for _, q := range ps {
		q.cmd.Process.Signal(syscall.SIGQUIT)
	}
	for _, q := range ps {
		<-q.done
	}
	t.Fatalf("%s shortly before the test's timeout (%s); the output and goroutines:%s", what, state(), outputs(ps...))
}
