package server

import (
	"runtime/debug"
	"testing"
)

func TestVersionOf(t *testing.T) {
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name     string
		version  string
		settings []debug.BuildSetting
		want     string
	}{
		{"module version", "v1.2.0", vcs("066bc1c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7", "false"), "v1.2.0"},
		{"pseudo-version stamped by go build", "v0.0.0-20261201011500-066bc1c1d2e3+dirty", nil, "v0.0.0-20261201011500-066bc1c1d2e3+dirty"},
		{"revision", "(devel)", vcs("066bc1c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7", "false"), "066bc1c1d2e3"},
		{"dirty revision", "(devel)", vcs("066bc1c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7", "true"), "066bc1c1d2e3+dirty"},
		{"nothing known", "(devel)", nil, "devel"},
		{"empty main version", "", nil, "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			bi := &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcp-sqlite-memory/mcp-sqlite-memory", Version: tt.version}, Settings: tt.settings}
			if got := versionOf(bi); got != tt.want {
				t.Fatalf("versionOf = %q, want %q", got, tt.want)
			}
		})
	}
	if Version() == "" {
		t.Fatal("Version() is empty")
	}
}
