package ipc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
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
		{"a worker of version 4", self, "v4worker", fmt.Sprintf("it speaks worker protocol version 4, this server speaks version %d: the server and worker binaries must come from the same build", Version)},
		{"a later worker", self, "laterworker", fmt.Sprintf("it speaks worker protocol version %d, this server speaks version %d: the server and worker binaries must come from the same build", Version+1, Version)},
		{"a later worker that speaks this version too", self, "rangeworker", ""},
		{"a frame of this version without versions", self, "nospeaks", fmt.Sprintf("it answers worker protocol version %d without the versions it speaks", Version)},
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

// TestVersionRefusal: a worker refuses a request of another version with
// a frame that carries, as numbers, the versions it speaks, and whose
// words still name them for a front before version 5 (which read them
// out of the message) and for a person.
func TestVersionRefusal(t *testing.T) {
	for _, v := range []int{0, 1, Version - 1, Version + 1, 1 << 20} {
		t.Run(fmt.Sprint(v), func(t *testing.T) {
			_, err := ReadRequest(strings.NewReader(fmt.Sprintf(`{"v":%d,"op":"query","db":"x"}`, v)))
			if !errors.Is(err, errcode.InvalidArgument) {
				t.Fatalf("got %v, want INVALID_ARGUMENT", err)
			}
			var buf bytes.Buffer
			if err := WriteResponse(&buf, Failure(err)); err != nil {
				t.Fatal(err)
			}
			resp, err := ReadResponse(&buf)
			if err != nil {
				t.Fatal(err)
			}
			if resp.Speaks == nil || *resp.Speaks != (Versions{Version, Version}) || resp.Code != errcode.InvalidArgument {
				t.Fatalf("refusal %+v, want speaks %d to %d", resp, Version, Version)
			}
			if want := fmt.Sprintf("request has protocol version %d; this worker speaks versions %d to %d", v, Version, Version); !strings.HasPrefix(resp.Message, want) {
				t.Fatalf("message %q, want it to start %q", resp.Message, want)
			}
		})
	}
	// Any other refusal carries no versions.
	if r := Failure(errcode.New(errcode.InvalidArgument, "unknown op")); r.Speaks != nil {
		t.Fatalf("a refusal of another kind carries versions: %+v", r)
	}
}
