package ipc

import (
	"io"
	"os"
	"strconv"
)

// Between a standby worker and the front: what the front tells a worker
// before any request exists, and how the worker says it is ready for one.
const (
	// EnvReady set to "1" asks the worker to write [ReadyByte] to stdout
	// once it has done everything its request does not change (confined,
	// limited, database open, codec warm) and is about to read stdin. The
	// front uses it to start standbys one at a time and to log which calls
	// a ready standby served. Without it, the worker writes nothing but its
	// response, which keeps it a plain stdin filter for fuzzers.
	EnvReady = "MCP_SQLITE_WORKER_READY"
	// ReadyByte is the one byte a worker started with EnvReady writes
	// before its response (ASCII ACK: no JSON document starts with it).
	ReadyByte = 0x06
	// EnvMemoryMB carries --worker-memory-mb to workers started ahead, so
	// that they set their memory limits before the request arrives; a
	// request may then ask for the same budget or less, never more.
	EnvMemoryMB = "MCP_SQLITE_WORKER_MEMORY_LIMIT_MB"
	// EnvWarm set to "1" tells a worker it is a standby with time to spare
	// before its request: it warms its JSON codec then. A worker started
	// for a call that is already waiting skips that.
	EnvWarm = "MCP_SQLITE_WORKER_WARM"
	// EnvFrontPID is the front's process id: a worker whose parent is
	// another process (the front died before the kernel was told to kill
	// its children with it) exits at once.
	EnvFrontPID = "MCP_SQLITE_WORKER_FRONT_PID"
)

// StandbyEnv is what the spawner adds to every worker's environment.
func StandbyEnv(memoryMB int) []string {
	env := []string{EnvReady + "=1", EnvFrontPID + "=" + strconv.Itoa(os.Getpid())}
	if memoryMB > 0 {
		env = append(env, EnvMemoryMB+"="+strconv.Itoa(memoryMB))
	}
	return env
}

// SignalReady writes ReadyByte to w when the environment asks for it.
func SignalReady(w io.Writer, getenv func(string) string) error {
	if getenv(EnvReady) != "1" {
		return nil
	}
	_, err := w.Write([]byte{ReadyByte})
	return err
}
