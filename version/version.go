// Package version says which build this is: the version and commit a
// release stamped in with -ldflags -X (scripts/release.sh), else what the
// Go toolchain recorded (a module version from go install ...@v1.2.0, or
// the VCS revision of a clone), else "devel".
//
// It stands alone, small as it is, because both binaries print it and the
// lean worker may link neither the server nor the MCP library: a package
// that imports nothing of the project is the one place both can read.
package version

import (
	"runtime/debug"
	"strings"
	"sync"
)

// Stamped by a release build:
//
//	-ldflags "-X github.com/mcp-sqlite-memory/mcp-sqlite-memory/version.release=1.2.0
//	          -X github.com/mcp-sqlite-memory/mcp-sqlite-memory/version.commit=<sha>"
var (
	release string
	commit  string
)

// Info is what a build knows of itself.
type Info struct {
	Version string // "1.2.0", "v0.0.0-2026...-066bc1c1d2e3", "066bc1c1d2e3+dirty" or "devel"
	Commit  string // the full VCS revision, "" when unknown
}

// Get returns this build's Info.
func Get() Info { return current() }

var current = sync.OnceValue(func() Info {
	bi, _ := debug.ReadBuildInfo()
	return of(release, commit, bi)
})

// of picks the version out of a release stamp and build information (bi
// may be nil: a binary built without module support).
func of(release, commit string, bi *debug.BuildInfo) Info {
	var revision string
	var dirty bool
	if bi != nil {
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				revision = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	if commit == "" {
		commit = revision
	}
	switch {
	case release != "":
		return Info{Version: release, Commit: commit}
	case bi != nil && bi.Main.Version != "" && bi.Main.Version != "(devel)":
		return Info{Version: bi.Main.Version, Commit: commit}
	case revision != "":
		v := revision
		if len(v) > 12 {
			v = v[:12]
		}
		if dirty {
			v += "+dirty"
		}
		return Info{Version: v, Commit: commit}
	}
	return Info{Version: "devel", Commit: commit}
}

// Line is what `PROGRAM --version` prints: "PROGRAM VERSION", with
// " (commit C)" when the commit is known and the version does not already
// show it.
func Line(program string) string {
	i := Get()
	s := program + " " + i.Version
	if c := short(i.Commit); c != "" && !strings.Contains(i.Version, c) {
		s += " (commit " + c + ")"
	}
	return s
}

func short(c string) string {
	if len(c) > 12 {
		return c[:12]
	}
	return c
}
