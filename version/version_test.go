package version

import (
	"runtime/debug"
	"testing"
)

func TestOf(t *testing.T) {
	const rev = "066bc1c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7"
	vcs := func(rev, modified string) []debug.BuildSetting {
		return []debug.BuildSetting{{Key: "vcs", Value: "git"}, {Key: "vcs.revision", Value: rev}, {Key: "vcs.modified", Value: modified}}
	}
	tests := []struct {
		name             string
		release, commit  string
		version          string
		settings         []debug.BuildSetting
		noBuildInfo      bool
		want, wantCommit string
	}{
		{name: "release stamp", release: "1.2.0", commit: rev, version: "(devel)", want: "1.2.0", wantCommit: rev},
		{name: "release stamp beats the module version", release: "1.2.0", commit: rev, version: "v9.9.9", want: "1.2.0", wantCommit: rev},
		{name: "release without commit takes the VCS one", release: "1.2.0", version: "(devel)", settings: vcs(rev, "false"), want: "1.2.0", wantCommit: rev},
		{name: "module version", version: "v1.2.0", settings: vcs(rev, "false"), want: "v1.2.0", wantCommit: rev},
		{name: "pseudo-version stamped by go build", version: "v0.0.0-20261201011500-066bc1c1d2e3+dirty", want: "v0.0.0-20261201011500-066bc1c1d2e3+dirty"},
		{name: "revision", version: "(devel)", settings: vcs(rev, "false"), want: "066bc1c1d2e3", wantCommit: rev},
		{name: "dirty revision", version: "(devel)", settings: vcs(rev, "true"), want: "066bc1c1d2e3+dirty", wantCommit: rev},
		{name: "nothing known", version: "(devel)", want: "devel"},
		{name: "empty main version", version: "", want: "devel"},
		{name: "no build info", noBuildInfo: true, want: "devel"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var bi *debug.BuildInfo
			if !tt.noBuildInfo {
				bi = &debug.BuildInfo{Main: debug.Module{Path: "github.com/mcp-sqlite-memory/mcp-sqlite-memory", Version: tt.version}, Settings: tt.settings}
			}
			got := of(tt.release, tt.commit, bi)
			if got.Version != tt.want || got.Commit != tt.wantCommit {
				t.Fatalf("of = %+v, want version %q commit %q", got, tt.want, tt.wantCommit)
			}
		})
	}
}

func TestLine(t *testing.T) {
	saved := current
	defer func() { current = saved }()
	tests := []struct {
		info Info
		want string
	}{
		{Info{"1.2.0", "066bc1c1d2e3f4a5b6c7"}, "prog 1.2.0 (commit 066bc1c1d2e3)"},
		{Info{"066bc1c1d2e3+dirty", "066bc1c1d2e3f4a5b6c7"}, "prog 066bc1c1d2e3+dirty"},
		{Info{"v1.2.0", ""}, "prog v1.2.0"},
		{Info{"devel", ""}, "prog devel"},
	}
	for _, tt := range tests {
		current = func() Info { return tt.info }
		if got := Line("prog"); got != tt.want {
			t.Errorf("Line(%+v) = %q, want %q", tt.info, got, tt.want)
		}
	}
}
