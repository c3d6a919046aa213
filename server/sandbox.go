package server

import (
	"errors"
	"os"
	"path/filepath"
	"runtime"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// workerEnv is what every worker is told before its request: the
// database to open ahead, the log level, and the sandbox allowance, so that
// a standby worker confines itself before its request arrives; workers
// refuse requests outside it.
func (s *Server) workerEnv() ipc.WorkerEnv {
	// In cluster mode the workers read the local node's file, which is
	// rqlite's: read-only, as the readonly profile's (cluster.go).
	readOnly := s.cfg.Profile == config.ProfileReadonly || s.cluster != nil
	w := ipc.WorkerEnv{Preopen: s.dbPath, PreopenReadOnly: readOnly}
	if s.cfg.Verbose {
		w.LogLevel = "debug"
	}
	if !s.cfg.Sandbox {
		w.SandboxOff = true
		return w
	}
	// The front confines the workers it starts while its own connection
	// holds SQLite's locks: it reads the header through the hold (takeHold).
	a := sandbox.Allowance{DB: s.dbPath, ReadOnly: readOnly, Header: s.hold}
	if s.cfg.Profile != config.ProfileReadonly && s.cfg.Snapshots > 0 && s.cfg.SnapshotDir != "" {
		if dir, err := filepath.Abs(s.cfg.SnapshotDir); err == nil {
			a.SnapshotDir = dir
		}
	}
	// A private folder for SQLite's temporary files (big sorts, statement
	// journals), so that the workers need no right on the shared /tmp. It
	// holds no names for long: SQLite unlinks each file as it creates it.
	if dir, err := os.MkdirTemp("", "mcp-sqlite-memory-tmp-"); err != nil {
		s.log.Warn("no private temporary folder for workers; big sorts may fail inside the sandbox", "error", err)
	} else {
		a.TempDir = dir
		s.closers = append(s.closers, removeDir(dir))
	}
	// Said once here, not by every worker: the kernel is the same.
	if abi, err := sandbox.Supported(); err != nil && runtime.GOOS == "linux" {
		s.log.Warn(err.Error() + "; workers run with no_new_privs and resource limits only")
	} else if err != nil {
		s.log.Debug(err.Error())
	} else {
		s.log.Debug("workers confine themselves with Landlock", "abi", abi, "db", a.DB, "snapshot_dir", a.SnapshotDir, "temp_dir", a.TempDir, "read_only", a.ReadOnly)
	}
	switch err := sandbox.SeccompSupported(); {
	case err == nil:
		s.log.Debug("workers install the seccomp system call allowlist before their request")
	case errors.Is(err, sandbox.ErrNoSeccomp) && runtime.GOOS == "linux":
		s.log.Warn(err.Error())
	case errors.Is(err, sandbox.ErrNoSeccomp):
		s.log.Debug(err.Error())
	default:
		// No table for this architecture: every confined worker refuses.
		s.log.Error(err.Error())
	}
	w.Sandbox = &a
	return w
}

// removeDir removes the workers' temporary folder when the server closes.
type removeDir string

func (d removeDir) Close() error { return os.RemoveAll(string(d)) }
