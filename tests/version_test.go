package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// TestWorkerOfAnotherVersionIsRefused: a server refuses, before it
// serves, a real worker binary built to speak another protocol version
// (the worker of this tree with ipc.Version replaced through go build's
// -overlay), and says so in words a person can act on. The worker states
// its versions as numbers in its refusal frame (ipc.Response.Speaks); the
// server reads them, not a sentence.
func TestWorkerOfAnotherVersionIsRefused(t *testing.T) {
	t.Parallel()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("the go tool is not on PATH")
	}
	dir := testDir(t)
	// This tree's protocol.go with Version one higher, in place of the real one.
	src, err := filepath.Abs("../ipc/protocol.go")
	if err != nil {
		t.Fatal(err)
	}
	text, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	decl := regexp.MustCompile(`(?m)^const Version = \d+$`)
	other := ipc.Version + 1
	if !decl.Match(text) {
		t.Fatalf("%s has no line `const Version = N`", src)
	}
	patched := filepath.Join(dir, "protocol.go")
	if err := os.WriteFile(patched, decl.ReplaceAll(text, []byte(fmt.Sprintf("const Version = %d", other))), 0o600); err != nil {
		t.Fatal(err)
	}
	overlay, _ := json.Marshal(map[string]any{"Replace": map[string]string{src: patched}})
	overlayPath := filepath.Join(dir, "overlay.json")
	if err := os.WriteFile(overlayPath, overlay, 0o600); err != nil {
		t.Fatal(err)
	}
	worker := filepath.Join(dir, "mcp-sqlite-memory-worker")
	if runtime.GOOS == "windows" {
		worker += ".exe"
	}
	if out, err := exec.Command(goTool, "build", "-overlay", overlayPath, "-o", worker, "../cmd/mcp-sqlite-memory-worker").CombinedOutput(); err != nil {
		t.Fatalf("build a worker of version %d: %v\n%s", other, err, out)
	}

	// The worker itself: its refusal frame carries the versions as numbers.
	hand := exec.Command(worker)
	hand.Stdin = strings.NewReader(fmt.Sprintf(`{"v":%d,"op":"query","db":"x"}`, ipc.Version))
	out, err := hand.Output()
	if err != nil {
		t.Fatalf("worker: %v", err)
	}
	var refusal struct {
		V      int           `json:"v"`
		Code   string        `json:"code"`
		Speaks *ipc.Versions `json:"speaks"`
	}
	if err := json.Unmarshal(out, &refusal); err != nil || refusal.V != other || refusal.Code != "INVALID_ARGUMENT" || refusal.Speaks == nil || *refusal.Speaks != (ipc.Versions{Min: other, Max: other}) {
		t.Fatalf("the worker of version %d refused a version-%d request with %s (%v)", other, ipc.Version, out, err)
	}

	// The server, given it, does not serve.
	db := filepath.Join(dir, "m.db")
	cmd := exec.Command(serverBin, "call", "--db", db, "--worker", worker, "verify_chain", "{}")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MCP_SQLITE_WORKER=", "MCP_SQLITE_DB=", "DATABASE_PATH=")
	text, err = cmd.CombinedOutput()
	if code := exitCode(err); code != 2 {
		t.Fatalf("exit %d, want 2 (a usage error):\n%s", code, bounded(string(text)))
	}
	want := fmt.Sprintf("--worker %s (from --worker or MCP_SQLITE_WORKER) cannot run statements: it speaks worker protocol version %d, this server speaks version %d: the server and worker binaries must come from the same build", worker, other, ipc.Version)
	if !strings.Contains(string(text), want) || !strings.Contains(string(text), "Try: ") {
		t.Fatalf("output lacks %q and a Try: line:\n%s", want, bounded(string(text)))
	}
	if _, err := os.Stat(db); err == nil {
		t.Errorf("%s was created by a server that refused its worker", db)
	}
}
