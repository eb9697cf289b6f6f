package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// service is the crawlspace process the soak runs: `crawlspace run`, watched from outside as an
// operator would (its report file, its /metrics and /status.json, /proc).
type service struct {
	cmd        *exec.Cmd
	pid        int
	reportPath string
	logPath    string
	metricsURL string // http://127.0.0.1:PORT, once the service said where

	exited   chan struct{} // closed when the process has ended
	exitedAt time.Time
	state    *os.ProcessState
	waitErr  error

	// killAboveKB is the RssAnon past which the soak kills the service (0: never): the memory
	// check has failed by then, and a service whose memory runs away would take the machine
	// with it before the soak ends. killedAt is the sample that did it.
	killAboveKB int64
	killedAt    memSample

	mu       sync.Mutex
	samples  []memSample
	cycles   []cycle
	signaled time.Time // when the soak sent SIGTERM; zero before
}

// memSample is one reading of /proc/PID/status.
type memSample struct {
	At      time.Time
	RSSKB   int64 // VmRSS
	AnonKB  int64 // RssAnon
	Running bool
}

// cycle is one cycle of the service, as its report file told it.
type cycle struct {
	Started  time.Time         `json:"started"`
	Finished time.Time         `json:"finished"`
	Outcome  string            `json:"outcome"`
	Error    string            `json:"error,omitempty"`
	Total    counts            `json:"total"`
	Sources  map[string]counts `json:"sources"`
}

type counts struct {
	Fetched       int            `json:"fetched"`
	Created       int            `json:"created"`
	Updated       int            `json:"updated"`
	Unchanged     int            `json:"unchanged"`
	Deleted       int            `json:"deleted"`
	Errors        int            `json:"errors"`
	IndexFailures int            `json:"index_failures"`
	Reasons       map[string]int `json:"reasons"`
}

// startService runs `crawlspace run -config cfg -report …` with its output in dir, and waits
// until it serves its metrics.
func startService(ctx context.Context, bin, cfg, dir string) (*service, error) {
	s := &service{reportPath: filepath.Join(dir, "report.json"), logPath: filepath.Join(dir, "crawlspace.log"),
		exited: make(chan struct{})}
	logf, err := os.Create(s.logPath)
	if err != nil {
		return nil, err
	}
	outf, err := os.Create(filepath.Join(dir, "crawlspace.out"))
	if err != nil {
		logf.Close()
		return nil, err
	}
	s.cmd = exec.Command(bin, "run", "-config", cfg, "-report", s.reportPath)
	s.cmd.Stdout, s.cmd.Stderr = outf, logf
	if err := s.cmd.Start(); err != nil {
		logf.Close()
		outf.Close()
		return nil, fmt.Errorf("starting %s: %w", bin, err)
	}
	s.pid = s.cmd.Process.Pid
	go func() {
		s.waitErr = s.cmd.Wait()
		s.exitedAt = time.Now()
		s.state = s.cmd.ProcessState
		logf.Close()
		outf.Close()
		close(s.exited)
	}()
	deadline := time.Now().Add(2 * time.Minute)
	for s.metricsURL == "" {
		select {
		case <-s.exited:
			return nil, fmt.Errorf("crawlspace run exited at start (%v): %s", s.waitErr, tail(s.logPath, 5))
		case <-ctx.Done():
			s.kill()
			return nil, ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		s.metricsURL = metricsURL(s.logPath)
		if s.metricsURL == "" && time.Now().After(deadline) {
			s.kill()
			return nil, fmt.Errorf("crawlspace run did not say where it serves /metrics: %s", tail(s.logPath, 5))
		}
	}
	return s, nil
}

// metricsURL finds the address of /metrics in the service's JSON log.
func metricsURL(logPath string) string {
	f, err := os.Open(logPath)
	if err != nil {
		return ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
			URL string `json:"url"`
		}
		if json.Unmarshal(sc.Bytes(), &line) == nil && strings.HasPrefix(line.Msg, "serving the status page") {
			return strings.TrimSuffix(line.URL, "/")
		}
	}
	return ""
}

// watch samples memory and reads the report file every second until the process ends.
func (s *service) watch() {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		if m := s.sample(); s.killAboveKB > 0 && m.AnonKB > s.killAboveKB {
			s.mu.Lock()
			s.killedAt = m
			s.mu.Unlock()
			s.kill()
			return
		}
		s.readReport()
		select {
		case <-s.exited:
			return
		case <-t.C:
		}
	}
}

// sample notes the process's memory now, and returns it.
func (s *service) sample() memSample {
	m := memSample{At: time.Now()}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", s.pid))
	if err == nil {
		for line := range strings.SplitSeq(string(raw), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			switch k {
			case "VmRSS":
				m.RSSKB = n
			case "RssAnon":
				m.AnonKB = n
			case "State":
				m.Running = !strings.HasPrefix(strings.TrimSpace(v), "Z")
			}
		}
	}
	if !m.Running {
		return m
	}
	s.mu.Lock()
	s.samples = append(s.samples, m)
	s.mu.Unlock()
	return m
}

// killedForMemory is the sample past killAboveKB that had the soak kill the service.
func (s *service) killedForMemory() (memSample, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.killedAt, !s.killedAt.At.IsZero()
}

// readReport notes the cycle the report file holds; the file is rewritten after each cycle, so a
// cycle with a new start is a new cycle. A file caught half-written is read at the next tick.
func (s *service) readReport() {
	raw, err := os.ReadFile(s.reportPath)
	if err != nil {
		return
	}
	var c cycle
	if json.Unmarshal(raw, &c) != nil || c.Started.IsZero() {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if n := len(s.cycles); n > 0 && s.cycles[n-1].Started.Equal(c.Started) {
		s.cycles[n-1] = c
		return
	}
	s.cycles = append(s.cycles, c)
}

// completedSince is the first cycle that started after t and completed, if any.
func (s *service) completedSince(t time.Time) (cycle, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cycles {
		if c.Started.After(t) && c.Outcome == "completed" {
			return c, true
		}
	}
	return cycle{}, false
}

// alive says whether the process still runs.
func (s *service) alive() bool {
	select {
	case <-s.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM and waits for the process to end, killing it after grace. It returns how
// long it took to exit.
func (s *service) stop(grace time.Duration) (time.Duration, error) {
	s.mu.Lock()
	s.signaled = time.Now()
	s.mu.Unlock()
	start := time.Now()
	// A process that already ended is waited for below like one that ends now.
	if err := s.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		s.kill()
		return 0, err
	}
	select {
	case <-s.exited:
		return time.Since(start), nil
	case <-time.After(grace):
		s.kill()
		return time.Since(start), fmt.Errorf("crawlspace run did not exit within %v of SIGTERM: killed", grace)
	}
}

// exitedEarly says the process ended before the soak signalled it. Call it once it has ended.
func (s *service) exitedEarly() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.signaled.IsZero() || s.exitedAt.Before(s.signaled)
}

// cycleList is every cycle the report file has told of so far.
func (s *service) cycleList() []cycle {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.cycles)
}

func (s *service) kill() {
	s.cmd.Process.Kill()
	<-s.exited
}

// exitCode is the process's exit status, or -1 when a signal ended it.
func (s *service) exitCode() int {
	if s.state == nil {
		return -1
	}
	return s.state.ExitCode()
}

// scrape reads the service's /metrics.
func (s *service) scrape() (serviceMetrics, error) {
	var m serviceMetrics
	body, err := get(s.metricsURL + "/metrics")
	if err != nil {
		return m, err
	}
	for line := range strings.SplitSeq(string(body), "\n") {
		name, value, ok := strings.Cut(line, " ")
		if !ok {
			continue
		}
		v, err := strconv.ParseFloat(value, 64)
		if err != nil {
			continue
		}
		switch {
		case name == "crawlspace_elasticsearch_bulk_failures_total":
			m.BulkFailures = v
		case strings.HasPrefix(name, "crawlspace_elasticsearch_retries_total{"):
			m.Retries += v
		}
	}
	return m, nil
}

// statusSource is one source of the service's /status.json.
type statusSource struct {
	Name  string         `json:"name"`
	Store map[string]int `json:"store"`
}

// storeCounts reads how many URLs each source holds in the state store, by state.
func (s *service) storeCounts() (map[string]map[string]int, error) {
	body, err := get(s.metricsURL + "/status.json")
	if err != nil {
		return nil, err
	}
	var st struct {
		Sources []statusSource `json:"sources"`
	}
	if err := json.Unmarshal(body, &st); err != nil {
		return nil, err
	}
	out := map[string]map[string]int{}
	for _, src := range st.Sources {
		out[src.Name] = src.Store
	}
	return out, nil
}

var httpClient = &http.Client{Timeout: 30 * time.Second}

func get(u string) ([]byte, error) {
	res, err := httpClient.Get(u)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	body, err := io.ReadAll(res.Body)
	if err != nil {
		return nil, err
	}
	if res.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", u, res.Status)
	}
	return body, nil
}

// tail is the last n lines of a file, on one line, for an error message.
func tail(path string, n int) string {
	raw, _ := os.ReadFile(path)
	lines := bytes.Split(bytes.TrimSpace(raw), []byte("\n"))
	lines = lines[max(len(lines)-n, 0):]
	return string(bytes.Join(lines, []byte(" | ")))
}

// logProblems counts the service's log lines that say it crashed or something broke: a panic,
// a fatal error, and lines at level ERROR.
func logProblems(logPath string) (crashes int, errorLines []string) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, nil
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "panic:") || strings.HasPrefix(line, "fatal error:") {
			crashes++
		}
		var l struct {
			Level string `json:"level"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Level == "ERROR" {
			errorLines = append(errorLines, line)
		}
	}
	return crashes, errorLines
}
