package ipc

import (
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// What the front tells a worker before any request exists travels in the
// worker's environment: a standby is started, confined, limited and has
// its database open before there is a request to carry any of it.
// WorkerEnv is that contract: the front encodes it (Env), the worker's
// main decodes it once (DecodeWorkerEnv) and passes it down.
const (
	// EnvReady set to "1" asks the worker to write [ReadyByte] to stdout
	// once it has done everything its request does not change (confined,
	// limited, database open, codec warm) and is about to read stdin. The
	// front uses it to start standbys one at a time and to log which calls
	// a ready standby served. Without it, the worker writes nothing but its
	// response, which keeps it a plain stdin filter for fuzzers.
	EnvReady = "MCP_SQLITE_WORKER_READY"
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
	// EnvPreopen names the database a worker opens while it waits for its
	// request (preopenReadOnly in front for a read-only open), so that a standby has
	// its connection open, its backstops set and the schema read before
	// the call arrives.
	EnvPreopen = "MCP_SQLITE_WORKER_PREOPEN"
	// EnvLogLevel is the level of the worker's log lines (hclog's names).
	EnvLogLevel = "MCP_SQLITE_WORKER_LOG_LEVEL"
	// The sandbox allowance travels as [sandbox.EnvAllowance] ("off" for
	// --sandbox off), SQLite's temporary folder as [sandbox.EnvTempDir].
)

// preopenReadOnly marks, in front of EnvPreopen's path, a database the
// standby opens read-only (the readonly profile).
const preopenReadOnly = "ro:"

// AddressSpaceMarginMB is added to a standby's address-space limit (Linux's
// RLIMIT_AS) while it waits: the runtime goes on mapping after the worker
// says it is ready (each thread a cgo build starts maps a stack and a 64 MiB
// malloc arena; 137 MiB was seen under load), and that must not come out of
// the statement's budget. The worker trims the limit to the budget, counted
// from what it has mapped then, once its request is read.
const AddressSpaceMarginMB = 512

// envMallocArenas caps glibc's malloc arenas (see WorkerEnv.Env).
const envMallocArenas = "MALLOC_ARENA_MAX"

// ReadyByte is the one byte a worker started with EnvReady writes before
// its response (ASCII ACK: no JSON document starts with it).
const ReadyByte = 0x06

// WorkerEnv is what the front tells a worker through its environment.
type WorkerEnv struct {
	// Ready asks for ReadyByte (EnvReady).
	Ready bool
	// FrontPID is the front's process id (EnvFrontPID; 0: not said).
	FrontPID int
	// MemoryMB is the memory budget to set before the request (0: none).
	MemoryMB int
	// Warm: a standby with time to spare (EnvWarm).
	Warm bool
	// Preopen is the database to open ahead ("": none), read-only when
	// PreopenReadOnly.
	Preopen         string
	PreopenReadOnly bool
	// Sandbox is what the worker confines itself to; nil with SandboxOff
	// false is a worker the front did not confine (a standalone one).
	Sandbox    *sandbox.Allowance
	SandboxOff bool
	// TempDir is SQLite's temporary folder (SQLITE_TMPDIR), the
	// allowance's own when it names one.
	TempDir string
	// LogLevel is the worker's log level ("": the default).
	LogLevel string
}

// WorkerEnvErrors are the values DecodeWorkerEnv could not read, each
// reported by the part of the worker that needs it: a bad allowance stops
// the worker (it must not run unconfined), a bad memory budget fails the
// request that takes it.
type WorkerEnvErrors struct {
	Sandbox, MemoryMB error
}

// Env returns base with the contract's variables, inherited ones dropped
// first: an inherited sandbox marker must not stand in for confinement.
func (w WorkerEnv) Env(base []string) []string {
	env := withoutVars(base, EnvReady, EnvMemoryMB, EnvWarm, EnvFrontPID, EnvPreopen, sandbox.EnvAllowance, sandbox.EnvConfined)
	if w.LogLevel != "" {
		env = append(withoutVars(env, EnvLogLevel), EnvLogLevel+"="+w.LogLevel)
	}
	if w.Ready {
		env = append(env, EnvReady+"=1")
	}
	if w.FrontPID != 0 {
		env = append(env, EnvFrontPID+"="+strconv.Itoa(w.FrontPID))
	}
	if w.MemoryMB > 0 {
		env = append(env, EnvMemoryMB+"="+strconv.Itoa(w.MemoryMB))
		// A worker linked with cgo (modernc.org/libc links package net)
		// starts its threads with pthread_create, and glibc gives each
		// thread that frees a malloc arena of its own: 64 MiB of address
		// space out of the statement's budget (a thread started during a
		// statement left it 127 of 200 MiB). The worker hardly uses C
		// malloc; one arena is enough.
		env = append(withoutVars(env, envMallocArenas), envMallocArenas+"=1")
	}
	if w.Warm {
		env = append(env, EnvWarm+"=1")
	}
	if w.Preopen != "" {
		v := w.Preopen
		if w.PreopenReadOnly {
			v = preopenReadOnly + v
		}
		env = append(env, EnvPreopen+"="+v)
	}
	switch {
	case w.Sandbox != nil:
		if w.Sandbox.TempDir != "" {
			env = append(withoutVars(env, sandbox.EnvTempDir), sandbox.EnvTempDir+"="+w.Sandbox.TempDir)
		}
		env = append(env, w.Sandbox.Env())
	case w.SandboxOff:
		env = append(env, sandbox.EnvAllowance+"="+sandbox.Off)
	}
	return env
}

// DecodeWorkerEnv reads the contract from getenv (os.Getenv in a worker).
func DecodeWorkerEnv(getenv func(string) string) (WorkerEnv, WorkerEnvErrors) {
	var w WorkerEnv
	var errs WorkerEnvErrors
	w.Ready = getenv(EnvReady) == "1"
	w.Warm = getenv(EnvWarm) == "1"
	w.FrontPID, _ = strconv.Atoi(getenv(EnvFrontPID))
	if v := getenv(EnvMemoryMB); v != "" {
		mb, err := strconv.Atoi(v)
		if err != nil || mb <= 0 {
			errs.MemoryMB = fmt.Errorf("bad %s=%q: want a whole number of MiB", EnvMemoryMB, v)
		} else {
			w.MemoryMB = mb
		}
	}
	v := getenv(EnvPreopen)
	w.Preopen, w.PreopenReadOnly = strings.CutPrefix(v, preopenReadOnly)
	w.Sandbox, w.SandboxOff, errs.Sandbox = sandbox.DecodeAllowance(getenv(sandbox.EnvAllowance))
	w.TempDir = getenv(sandbox.EnvTempDir)
	w.LogLevel = getenv(EnvLogLevel)
	return w, errs
}

// standbyEnv is what the spawner tells every worker it starts, on top of
// what its Config says: to signal when ready, the front's pid and the
// memory budget.
func standbyEnv(w WorkerEnv, memoryMB int) WorkerEnv {
	w.Ready, w.FrontPID, w.MemoryMB = true, os.Getpid(), memoryMB
	return w
}

// withoutVars returns a copy of env without the named variables.
func withoutVars(env []string, names ...string) []string {
	return slices.DeleteFunc(slices.Clone(env), func(kv string) bool {
		name, _, _ := strings.Cut(kv, "=")
		return slices.Contains(names, name)
	})
}

// SignalReady writes ReadyByte to out when the front asked for it.
func (w WorkerEnv) SignalReady(out io.Writer) error {
	if !w.Ready {
		return nil
	}
	_, err := out.Write([]byte{ReadyByte})
	return err
}
