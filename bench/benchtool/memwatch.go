package main

import (
	"bytes"
	"errors"
	"flag"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// MemPeak is what memwatch saw of the largest process of a session: GNU time
// reports the peak resident set, which counts the pages of a memory-mapped
// store the kernel may drop at will; anonymous memory (heap, stacks) is what
// the process really holds.
type MemPeak struct {
	PeakAnonKB int64 `json:"peak_anon_kb"`
	PeakRSSKB  int64 `json:"peak_rss_kb"`
	// WriteBytes is what the process caused to be written to disk
	// (write_bytes of /proc/PID/io) by its last sample: the store's write
	// amplification shows there.
	WriteBytes int64 `json:"write_bytes"`
	Samples    int   `json:"samples"`
}

// runMemWatch samples RssAnon and VmRSS of every process in a session until
// the session is empty (or SIGTERM), and prints the peaks of the process with
// the most anonymous memory: the measured program, not time(1) or timeout(1)
// around it.
func runMemWatch(args []string) error {
	fs := flag.NewFlagSet("memwatch", flag.ContinueOnError)
	sid := fs.Int("sid", 0, "session id (the pid of the setsid'd command)")
	every := fs.Duration("every", 200*time.Millisecond, "sampling interval")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *sid <= 0 {
		return errors.New("usage: benchtool memwatch -sid PID")
	}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	done := make(chan struct{})
	go func() { <-stop; close(done) }()
	return printJSON(watchSession(*sid, *every, done))
}

// watchSession samples until the session has no process left or done is
// closed, and returns the peaks of its process with the most anonymous memory.
func watchSession(sid int, every time.Duration, done <-chan struct{}) MemPeak {
	tick := time.NewTicker(every)
	defer tick.Stop()
	return watchSessionOn(sid, tick.C, done)
}

// watchSessionOn is watchSession sampling at once and then at each tick.
func watchSessionOn(sid int, tick <-chan time.Time, done <-chan struct{}) MemPeak {
	peaks := map[int]*MemPeak{}
	for {
		// The session is walked at every sample: the measured program is
		// started by timeout(1) after the watch begins, and a short run
		// would otherwise end between two walks.
		pids := sessionPids(sid)
		if len(pids) == 0 {
			return biggest(peaks)
		}
		for _, pid := range pids {
			anon, rss, ok := procMem(pid)
			if !ok {
				continue
			}
			p := peaks[pid]
			if p == nil {
				p = &MemPeak{}
				peaks[pid] = p
			}
			p.PeakAnonKB, p.PeakRSSKB = max(p.PeakAnonKB, anon), max(p.PeakRSSKB, rss)
			p.WriteBytes = max(p.WriteBytes, procWriteBytes(pid))
			p.Samples++
		}
		select {
		case <-done:
			return biggest(peaks)
		case <-tick:
		}
	}
}

func biggest(peaks map[int]*MemPeak) MemPeak {
	var best MemPeak
	for _, p := range peaks {
		if p.PeakAnonKB > best.PeakAnonKB {
			best = *p
		}
	}
	return best
}

// sessionPids lists the processes whose session id (field 6 of
// /proc/PID/stat) is sid.
func sessionPids(sid int) []int {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		raw, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		k := bytes.LastIndexByte(raw, ')')
		if k < 0 {
			continue
		}
		f := strings.Fields(string(raw[k+1:]))
		// state ppid pgrp session ...
		if len(f) > 3 && f[3] == strconv.Itoa(sid) && f[0] != "Z" {
			out = append(out, pid)
		}
	}
	return out
}

// procMem reads RssAnon and VmRSS (kB) from /proc/PID/status.
func procMem(pid int) (anon, rss int64, ok bool) {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return 0, 0, false
	}
	for _, line := range strings.Split(string(raw), "\n") {
		key, val, found := strings.Cut(line, ":")
		if !found {
			continue
		}
		v, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(val), " kB"), 10, 64)
		switch key {
		case "RssAnon":
			anon, ok = v, true
		case "VmRSS":
			rss = v
		}
	}
	return anon, rss, ok
}

// procWriteBytes reads write_bytes from /proc/PID/io (0 when unreadable).
func procWriteBytes(pid int) int64 {
	raw, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(raw), "\n") {
		if v, ok := strings.CutPrefix(line, "write_bytes: "); ok {
			n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			return n
		}
	}
	return 0
}
