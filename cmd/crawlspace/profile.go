package main

import (
	"fmt"
	"os"
	"runtime"
	"runtime/pprof"
	"runtime/trace"
)

// Profiles are asked for through the environment rather than flags so that
// bench/run can profile any subcommand, as run, without changing its command
// line: CRAWLSPACE_CPUPROFILE, CRAWLSPACE_MEMPROFILE and CRAWLSPACE_TRACE
// name the files.
const (
	envCPUProfile = "CRAWLSPACE_CPUPROFILE"
	envMemProfile = "CRAWLSPACE_MEMPROFILE"
	envTrace      = "CRAWLSPACE_TRACE"
)

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
	return func() {
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
