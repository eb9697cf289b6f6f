package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
)

func init() {
	register("version", "print the version and build information", runVersion)
}

// Stamped at build time with -ldflags -X (scripts/build does it for the
// releases and the container image): main.version (v1.2.3), main.revision
// (the commit) and main.buildDate (RFC 3339). Without them the module
// version, else "devel", and the version control information Go records
// are shown.
var (
	version   = ""
	revision  = ""
	buildDate = ""
)

func runVersion(args []string) int {
	fs := newFlags("version")
	if err := fs.Parse(args); err != nil {
		return exitUsage
	}
	fmt.Println(versionLine())
	return exitOK
}

// buildVersion is the version alone: the -X main.version value, the
// module version of a `go install module@version` build, else "devel".
func buildVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

// versionLine is `crawlspace version`'s one line:
//
//	crawlspace VERSION GOVERSION OS/ARCH [commit REVISION [TIME] [modified]]
//
// The commit part is there when the build was stamped with a revision or
// recorded version control information (not with -buildvcs=false, nor
// outside a checkout); a stamp wins over what Go recorded, since a build
// from a source archive records nothing.
func versionLine() string {
	line := fmt.Sprintf("crawlspace %s %s %s/%s", buildVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	var rev, when string
	modified := false
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if revision != "" {
		rev, when = revision, buildDate
	}
	if rev == "" {
		return line
	}
	line += " commit " + rev
	if when != "" {
		line += " " + when
	}
	if modified {
		line += " modified"
	}
	return line
}
