package ipc

import (
	"os"
	"path/filepath"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// getenvOf is os.Getenv over env, the last entry winning as in a process.
func getenvOf(env []string) func(string) string {
	return func(name string) string {
		v := ""
		for _, kv := range env {
			if k, val, _ := strings.Cut(kv, "="); k == name {
				v = val
			}
		}
		return v
	}
}

// absPath makes a slash path absolute on this platform: an allowance
// names absolute paths, and "/d/m.db" is not one on Windows.
func absPath(p string) string {
	if runtime.GOOS == "windows" {
		return `C:` + filepath.FromSlash(p)
	}
	return p
}

// What the front encodes is what the worker decodes, whatever the front
// inherited: an inherited sandbox marker or allowance never survives.
func TestWorkerEnvRoundTrip(t *testing.T) {
	inherited := []string{"PATH=/bin", sandbox.EnvConfined + `={"no_new_privs":true}`, sandbox.EnvAllowance + "=stale",
		sandbox.EnvTempDir + "=/elsewhere", EnvPreopen + "=/stale.db", EnvWarm + "=1", "MALLOC_ARENA_MAX=8"}
	tests := []struct {
		name string
		env  WorkerEnv
		// want is the decoded contract when it differs from env.
		want *WorkerEnv
	}{
		{"nothing said", WorkerEnv{}, &WorkerEnv{TempDir: "/elsewhere"}},
		{"sandbox off", WorkerEnv{SandboxOff: true, Preopen: "/d/m.db", PreopenReadOnly: true}, &WorkerEnv{SandboxOff: true, Preopen: "/d/m.db", PreopenReadOnly: true, TempDir: "/elsewhere"}},
		{"confined standby", WorkerEnv{
			Ready: true, FrontPID: 42, MemoryMB: 256, Warm: true, Preopen: absPath("/d/m.db"), LogLevel: "debug",
			Sandbox: &sandbox.Allowance{DB: absPath("/d/m.db"), SnapshotDir: absPath("/d/snap"), TempDir: absPath("/t")}, TempDir: absPath("/t"),
		}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := tt.env.Env(inherited)
			if slices.ContainsFunc(env, func(kv string) bool { return strings.HasPrefix(kv, sandbox.EnvConfined+"=") }) {
				t.Fatalf("the inherited marker survived: %q", env)
			}
			got, errs := DecodeWorkerEnv(getenvOf(env))
			if errs != (WorkerEnvErrors{}) {
				t.Fatalf("decode errors %+v", errs)
			}
			want := tt.env
			if tt.want != nil {
				want = *tt.want
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("decoded %+v\nwant    %+v\nfrom %q", got, want, env)
			}
			// A budget caps glibc's malloc arenas: each would take 64 MiB
			// of the worker's address space.
			if arenas := getenvOf(env)("MALLOC_ARENA_MAX"); (tt.env.MemoryMB > 0) != (arenas == "1") {
				t.Errorf("MemoryMB %d with MALLOC_ARENA_MAX %q", tt.env.MemoryMB, arenas)
			}
			if env[0] != "PATH=/bin" {
				t.Errorf("the inherited environment comes first: %q", env)
			}
		})
	}
}

// A bad value is reported to the part of the worker that needs it, and
// leaves the rest decoded.
func TestWorkerEnvDecodeErrors(t *testing.T) {
	env := []string{EnvMemoryMB + "=lots", sandbox.EnvAllowance + "={\"db\":\"relative.db\"}", EnvReady + "=1"}
	got, errs := DecodeWorkerEnv(getenvOf(env))
	if errs.MemoryMB == nil || !strings.Contains(errs.MemoryMB.Error(), `bad MCP_SQLITE_WORKER_MEMORY_LIMIT_MB="lots": want a whole number of MiB`) {
		t.Errorf("memory: %v", errs.MemoryMB)
	}
	if errs.Sandbox == nil || !strings.Contains(errs.Sandbox.Error(), "names no absolute database path") {
		t.Errorf("sandbox: %v", errs.Sandbox)
	}
	if !got.Ready || got.MemoryMB != 0 || got.Sandbox != nil {
		t.Errorf("decoded %+v", got)
	}
}

func TestStandbyEnv(t *testing.T) {
	w := standbyEnv(WorkerEnv{Preopen: "/d/m.db"}, 128)
	if !w.Ready || w.FrontPID != os.Getpid() || w.MemoryMB != 128 || w.Preopen != "/d/m.db" {
		t.Fatalf("%+v", w)
	}
}
