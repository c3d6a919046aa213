package rqlitetest

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

const self = "github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"

func TestOnlyTestsImportIt(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	for _, goos := range []string{"linux", "windows"} {
		cmd := exec.Command(goTool, "list", "-f", "{{.ImportPath}} {{join .Imports \" \"}}", "github.com/mcp-sqlite-memory/mcp-sqlite-memory/...")
		cmd.Env = append(os.Environ(), "GOOS="+goos)
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list: %v", err)
		}
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) < 10 {
			t.Fatalf("go list listed %d packages", len(lines))
		}
		for _, line := range lines {
			f := strings.Fields(line)
			if slices.Contains(f[1:], self) {
				t.Errorf("%s (GOOS=%s) imports %s outside its tests; test helpers stay out of the binaries", f[0], goos, self)
			}
		}
	}
}

// TestHelperBinary is run by TestMissingBinary in a child process; on its
// own it does nothing (a skip would need a reason .ci/allowed-skips lists).
func TestHelperBinary(t *testing.T) {
	if os.Getenv("RQLITETEST_HELPER") != "1" {
		return
	}
	Binary(t)
}

// TestMissingBinary: without rqlited a test skips and says the command
// that gets it, unless MCP_SQLITE_REQUIRE_RQLITE=1, where it fails.
func TestMissingBinary(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("rqlitetest runs on Linux only")
	}
	missing := filepath.Join(t.TempDir(), "no-rqlited")
	run := func(require string) (string, error) {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperBinary$", "-test.v")
		cmd.Env = append(os.Environ(), "RQLITETEST_HELPER=1", "MCP_SQLITE_RQLITED="+missing, "MCP_SQLITE_REQUIRE_RQLITE="+require)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	out, err := run("")
	if err != nil || !strings.Contains(out, "--- SKIP: TestHelperBinary") || !strings.Contains(out, "bash scripts/rqlite.sh") {
		t.Fatalf("without rqlited: %v\n%s", err, out)
	}
	out, err = run("1")
	if err == nil || !strings.Contains(out, "--- FAIL: TestHelperBinary") || !strings.Contains(out, "MCP_SQLITE_REQUIRE_RQLITE=1") {
		t.Fatalf("without rqlited, required: %v\n%s", err, out)
	}
}

func TestNodeArgs(t *testing.T) {
	got := NodeArgs("n2", "127.0.0.1:4011", "127.0.0.1:4012", []string{"127.0.0.1:4002", "127.0.0.1:4012", "127.0.0.1:4022"}, "/data/n2")
	want := "-node-id n2 -http-addr 127.0.0.1:4011 -raft-addr 127.0.0.1:4012 -auto-optimize-int 0h -auto-vacuum-int 0h -bootstrap-expect 3 -join 127.0.0.1:4002,127.0.0.1:4012,127.0.0.1:4022 /data/n2"
	if strings.Join(got, " ") != want {
		t.Errorf("NodeArgs:\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	// One node forms a cluster alone: no bootstrap, no join.
	got = NodeArgs("n1", "127.0.0.1:4001", "127.0.0.1:4002", []string{"127.0.0.1:4002"}, "/data/n1")
	if slices.Contains(got, "-join") || slices.Contains(got, "-bootstrap-expect") {
		t.Errorf("a single node joins: %v", got)
	}
}
