package ipc

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"time"
)

// CheckWait bounds CheckWorker: a real worker answers in milliseconds
// (its start, no database, no SQL).
var CheckWait = 10 * time.Second

// CheckWorker makes sure path (with args) is a worker this front can talk
// to before a server says it is serving: the file exists and may be run,
// and the program answers the versioned handshake within CheckWait. The
// handshake is a request of a version no worker speaks: a worker writes
// ReadyByte, then refuses it with a frame that carries the versions it
// speaks (Response.Speaks), before it touches any database; those must
// include Version. A worker of a version before 5 has no such field: its
// frame's own version is the newest it speaks; from version 5 on a frame
// without it is no worker's. The error says what is wrong
// in words, for the caller to add what to type.
func CheckWorker(ctx context.Context, path string, args []string) error {
	fi, err := os.Stat(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return errors.New("no such file")
	case err != nil:
		return err
	case fi.IsDir():
		return errors.New("it is a folder, not a program")
	case runtime.GOOS != "windows" && fi.Mode().Perm()&0o111 == 0:
		return errors.New("it is not executable (chmod +x, or point at the installed worker)")
	}
	ctx, cancel := context.WithTimeout(ctx, CheckWait)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(withoutVars(os.Environ(), EnvReady, EnvPreopen, EnvMemoryMB, EnvWarm), EnvReady+"=1")
	cmd.Stdin = bytes.NewReader([]byte(`{"v":` + strconv.Itoa(1<<20) + `,"op":"query"}` + "\n"))
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	cmd.WaitDelay = time.Second
	runErr := cmd.Run()
	if ctx.Err() == context.DeadlineExceeded {
		return fmt.Errorf("it did not answer the worker handshake within %s: it is not mcp-sqlite-memory-worker", CheckWait)
	}
	out := stdout.Bytes()
	if len(out) == 0 || out[0] != ReadyByte {
		if runErr != nil {
			return fmt.Errorf("it is not mcp-sqlite-memory-worker (it exited with %v before the worker handshake)", runErr)
		}
		return errors.New("it is not mcp-sqlite-memory-worker (it did not answer the worker handshake)")
	}
	// The header line only: ReadResponse would refuse another version's
	// frame before it says which versions that worker speaks.
	line, _, _ := bytes.Cut(out[1:], []byte("\n"))
	var head struct {
		V      int       `json:"v"`
		Speaks *Versions `json:"speaks"`
	}
	if err := json.Unmarshal(line, &head); err != nil || head.V == 0 {
		return fmt.Errorf("it is not mcp-sqlite-memory-worker (its handshake answer is not a worker frame: %.80q)", line)
	}
	speaks := Versions{head.V, head.V}
	switch {
	case head.Speaks != nil:
		speaks = *head.Speaks
	case head.V >= 5:
		// Every worker since version 5 says it.
		return fmt.Errorf("it answers worker protocol version %d without the versions it speaks: it is not mcp-sqlite-memory-worker of this build", head.V)
	}
	if !speaks.Has(Version) {
		return fmt.Errorf("it speaks worker protocol %s, this server speaks version %d: the server and worker binaries must come from the same build", speaks, Version)
	}
	return nil
}
