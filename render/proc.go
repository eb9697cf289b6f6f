package render

import (
	"bufio"
	"bytes"
	"os"
	"strconv"
)

// GroupMemory is the memory the processes of the process group pgid
// hold, in bytes: the sum of their proportional set sizes (Linux
// /proc/PID/smaps_rollup; VmRSS where it is missing). Chromium's processes
// share most of their pages; summing resident sizes would count those once
// per process, several times what the machine gives them.
func GroupMemory(pgid int) int64 {
	var total int64
	for _, pid := range GroupPIDs(pgid) {
		total += Memory(pid)
	}
	return total
}

// groupOver reports whether the processes of the process group pgid hold
// more than limit bytes as GroupMemory counts them, and what they hold.
// Their resident sizes, cheap to read, are summed first: a proportional
// size is never larger, so the page tables are walked (smaps_rollup) only
// for a group whose resident sizes pass the limit.
func groupOver(pgid int, limit int64) (int64, bool) {
	pids := GroupPIDs(pgid)
	var rss int64
	for _, pid := range pids {
		rss += resident(pid)
	}
	if rss <= limit {
		return rss, false
	}
	var pss int64
	for _, pid := range pids {
		pss += Memory(pid)
	}
	return pss, pss > limit
}

// resident is the resident size of one process, in bytes, 0 when it is
// gone: the second field of /proc/PID/statm, in pages.
func resident(pid int) int64 {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/statm")
	if err != nil {
		return 0
	}
	f := bytes.Fields(b)
	if len(f) < 2 {
		return 0
	}
	pages, _ := strconv.ParseInt(string(f[1]), 10, 64)
	return pages * int64(os.Getpagesize())
}

// GroupPIDs lists the live processes of the process group pgid.
func GroupPIDs(pgid int) []int {
	var pids []int
	for _, p := range Processes() {
		if p.PGID == pgid && p.State != 'Z' {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Process is one process as /proc/PID/stat gives it.
type Process struct {
	PID, PPID, PGID int
	// State is R, S, D, T, Z and so on.
	State byte
}

// Processes lists the processes of the machine (Linux /proc; none
// elsewhere).
func Processes() []Process {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var out []Process
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		stat, err := os.ReadFile("/proc/" + e.Name() + "/stat")
		if err != nil {
			continue
		}
		// The command name may hold spaces and parentheses: fields count
		// from the last ')'. After it: state, ppid, pgrp.
		i := bytes.LastIndexByte(stat, ')')
		if i < 0 {
			continue
		}
		f := bytes.Fields(stat[i+1:])
		if len(f) < 3 || len(f[0]) == 0 {
			continue
		}
		ppid, _ := strconv.Atoi(string(f[1]))
		pgid, _ := strconv.Atoi(string(f[2]))
		out = append(out, Process{PID: pid, PPID: ppid, PGID: pgid, State: f[0][0]})
	}
	return out
}

// Memory is the proportional set size of one process, in bytes.
func Memory(pid int) int64 {
	dir := "/proc/" + strconv.Itoa(pid)
	if n := field(dir+"/smaps_rollup", "Pss:"); n >= 0 {
		return n
	}
	return max(field(dir+"/status", "VmRSS:"), 0)
}

// field reads a "Name: N kB" line of a /proc file, -1 when it has none.
func field(path, name string) int64 {
	f, err := os.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := bytes.CutPrefix(sc.Bytes(), []byte(name)); ok {
			if fs := bytes.Fields(v); len(fs) > 0 {
				kb, err := strconv.ParseInt(string(fs[0]), 10, 64)
				if err == nil {
					return kb << 10
				}
			}
		}
	}
	return -1
}
