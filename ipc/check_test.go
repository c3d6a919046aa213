package ipc

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestCheckWorker: a worker of this protocol passes; anything else is
// refused with what is wrong, within CheckWait.
func TestCheckWorker(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	plain := filepath.Join(dir, "plain.txt")
	if err := os.WriteFile(plain, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := CheckWait
	CheckWait = 2 * time.Second
	t.Cleanup(func() { CheckWait = old })
	tests := []struct {
		name, path, mode string
		want             string // "" for no error
	}{
		{"a worker", self, "echo", ""},
		{"missing", filepath.Join(dir, "nope"), "echo", "no such file"},
		{"a folder", dir, "echo", "it is a folder"},
		{"not a worker", self, "noready", "it is not mcp-sqlite-memory-worker"},
		{"never answers", self, "sleepy", "did not answer the worker handshake within 2s"},
		{"an older worker", self, "oldworker", "it speaks worker protocol versions 1 to 1, this server speaks"},
	}
	if runtime.GOOS != "windows" {
		tests = append(tests, struct {
			name, path, mode string
			want             string
		}{"not executable", plain, "echo", "it is not executable"})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(helperEnv, tt.mode)
			err := CheckWorker(context.Background(), tt.path, []string{"-test.run=^$"})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("got %v, want %q", err, tt.want)
			}
		})
	}
}
