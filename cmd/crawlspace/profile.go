package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
	"time"
)

// Profiles are asked for through the environment rather than flags so that
// bench/run can profile any subcommand, as run, without changing its command
// line: CRAWLSPACE_CPUPROFILE, CRAWLSPACE_MEMPROFILE, CRAWLSPACE_HEAPPROFILE
// and CRAWLSPACE_TRACE name the files.
const (
	envCPUProfile = "CRAWLSPACE_CPUPROFILE"
	envMemProfile = "CRAWLSPACE_MEMPROFILE"
	envTrace      = "CRAWLSPACE_TRACE"
	// envHeapProfile's file is rewritten every heapProfileEvery with what the
	// heap holds: the memory profile written at exit shows allocations, and
	// by then a crawl has let go of everything it held.
	envHeapProfile = "CRAWLSPACE_HEAPPROFILE"
)

var heapProfileEvery = 20 * time.Second

// startProfiles starts the profiles the environment asks for and returns the
// function that writes them out; it never fails the command itself.
func startProfiles() (stop func()) {
	var cpu *os.File
	if path := os.Getenv(envCPUProfile); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawlspace: %s: %v\n", envCPUProfile, err)
		} else {
			cpu = f
		}
	}
	var tr *os.File
	if path := os.Getenv(envTrace); path != "" {
		f, err := os.Create(path)
		if err == nil {
			err = trace.Start(f)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawlspace: %s: %v\n", envTrace, err)
		} else {
			tr = f
		}
	}
	heapDone := make(chan struct{})
	if path := os.Getenv(envHeapProfile); path != "" {
		go writeHeapProfiles(path, heapDone)
	}
	return func() {
		close(heapDone)
		if tr != nil {
			trace.Stop()
			tr.Close()
		}
		if cpu != nil {
			pprof.StopCPUProfile()
			cpu.Close()
		}
		if path := os.Getenv(envMemProfile); path != "" {
			f, err := os.Create(path)
			if err == nil {
				runtime.GC()
				err = pprof.Lookup("allocs").WriteTo(f, 0)
				f.Close()
			}
			if err != nil {
				fmt.Fprintf(os.Stderr, "crawlspace: %s: %v\n", envMemProfile, err)
			}
		}
	}
}

// writeHeapProfiles replaces path with the in-use heap profile (as of the
// last collection) every heapProfileEvery until done, through a temporary
// file so a reader never sees half a profile.
func writeHeapProfiles(path string, done <-chan struct{}) {
	t := time.NewTicker(heapProfileEvery)
	defer t.Stop()
	writeHeapProfilesOn(path, t.C, done)
}

// writeHeapProfilesOn writes the profile at each tick until done.
func writeHeapProfilesOn(path string, tick <-chan time.Time, done <-chan struct{}) {
	for {
		select {
		case <-done:
			return
		case <-tick:
		}
		tmp := path + ".tmp"
		f, err := os.Create(tmp)
		if err == nil {
			err = pprof.Lookup("heap").WriteTo(f, 0)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
		}
		if err == nil {
			err = os.Rename(tmp, path)
		}
		if err != nil {
			fmt.Fprintf(os.Stderr, "crawlspace: %s: %v\n", envHeapProfile, err)
			return
		}
	}
}
