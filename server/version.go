package server

import (
	"runtime/debug"
	"sync"
)

// Version is this build's version, as --version prints it and MCP hosts
// see it in serverInfo: the module version when the binary was built from
// a module version (go install ...@v1.2.0; since Go 1.24 go build also
// stamps a pseudo-version from the VCS), else the VCS revision (+dirty
// with uncommitted changes), else "devel".
func Version() string { return buildVersion() }

var buildVersion = sync.OnceValue(func() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "devel"
	}
	return versionOf(bi)
})

// versionOf picks the version out of build information.
func versionOf(bi *debug.BuildInfo) string {
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		return v
	}
	var revision string
	var dirty bool
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			revision = s.Value
		case "vcs.modified":
			dirty = s.Value == "true"
		}
	}
	if revision == "" {
		return "devel"
	}
	if len(revision) > 12 {
		revision = revision[:12]
	}
	if dirty {
		revision += "+dirty"
	}
	return revision
}
