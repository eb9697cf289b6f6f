package main

import (
	"fmt"
	"runtime/debug"
)

func init() {
	register("version", "print the version and build information", runVersion)
}

// version is set at build time with -ldflags "-X main.version=v1.2.3";
// otherwise the module version or VCS revision from the build info is shown.
var version = ""

func runVersion(args []string) int {
	fs := newFlags("version")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	fmt.Println(versionLine())
	return exitOK
}

func versionLine() string {
	v := version
	info, ok := debug.ReadBuildInfo()
	if !ok {
		if v == "" {
			v = "unknown"
		}
		return "crawlspace " + v
	}
	if v == "" {
		v = info.Main.Version
	}
	var rev, when, dirty string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.time":
			when = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				dirty = " (modified)"
			}
		}
	}
	line := fmt.Sprintf("crawlspace %s %s", v, info.GoVersion)
	if rev != "" {
		line += fmt.Sprintf(" commit %s %s%s", rev, when, dirty)
	}
	return line
}
