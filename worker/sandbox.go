package worker

import (
	"bytes"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// sandboxState is what startSandbox found and did; admit checks every
// request against it.
var sandboxState = &sandbox.State{}

// probeHook is set only in test binaries built with the sandboxprobe tag: it
// runs the probe's file and network attempts in the confined worker.
var probeHook func(*sandbox.State) int

// startSandbox confines the worker before it reads its request, as the
// environment set by the front asks (Landlock and no_new_privs on Linux).
// Where that takes a re-execution, the confined process returns from here
// instead of this one.
func startSandbox(env ipc.WorkerEnv, envErr error, log hclog.Logger) error {
	if envErr != nil {
		return envErr
	}
	st, err := sandbox.Enter(env.Sandbox, env.SandboxOff, log)
	if err != nil {
		return err
	}
	sandboxState = st
	if probeHook != nil {
		os.Exit(probeHook(st))
	}
	return nil
}

// admit runs once the request is read. A standalone worker (no allowance in
// its environment) whose request asks for the sandbox confines itself now,
// to that request's database; then any request outside the allowance is
// refused, so that a worker never opens what it was not confined to.
func admit(req *ipc.Request, tempDir string, log hclog.Logger) error {
	snapDir := ""
	if s := req.Snapshot; s != nil && s.Keep > 0 {
		snapDir = s.Dir
	}
	st := sandboxState
	if st.Allowance == nil && !st.Off && req.Limits.Sandbox {
		// SQLite's temporary files go where the caller pointed them, if
		// anywhere; big sorts fail otherwise.
		a := sandbox.Allowance{DB: absPath(req.DB), ReadOnly: req.ReadOnlyFile, TempDir: tempDir}
		if snapDir != "" {
			a.SnapshotDir = absPath(snapDir)
		}
		// Confining reads the database header by hand, and closing that
		// descriptor would drop the locks of a connection opened ahead
		// (osfile/DESIGN.md): close it first; the request opens its own.
		dropPreopened()
		// The re-executed process reads the request again from stdin.
		var frame bytes.Buffer
		if err := ipc.WriteFrame(&frame, req); err != nil {
			return errcode.New(errcode.WorkerFailed, "the worker sandbox could not be set up: "+err.Error())
		}
		next, err := sandbox.Confine(a, sandbox.Options{Stdin: frame.Bytes(), Env: []string{a.Env()}}, log)
		if err != nil {
			return errcode.New(errcode.WorkerFailed, "the worker sandbox could not be set up: "+err.Error())
		}
		if next.Report.Missing != "" {
			log.Warn(next.Report.Missing + "; the worker runs with no_new_privs and resource limits only")
		}
		if err := confineSyscalls(next, log); err != nil {
			return errcode.New(errcode.WorkerFailed, "the worker sandbox could not be set up: "+err.Error())
		}
		sandboxState, st = next, next
	}
	if st.Allowance == nil {
		if !st.Off {
			log.Debug("no sandbox asked for (no allowance in the environment, none in the request): this worker runs unconfined")
		}
		return nil
	}
	if err := st.Allowance.Permits(req.DB, req.ReadOnlyFile, snapDir); err != nil {
		return errcode.New(errcode.WorkerFailed, "the request is outside this worker's sandbox: "+err.Error()+"; the server and its worker must be started for the same database")
	}
	return nil
}

func absPath(p string) string {
	if a, err := filepath.Abs(p); err == nil {
		return a
	}
	return p
}
