package worker

import (
	"fmt"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// limited is what this process has already set, so that a request pays
// only for the limits that depend on it.
var limited struct {
	process  bool // core dumps, open files, the parent check
	memoryMB int  // the memory budget in force (0: none)
	// fileBytes is the file-size limit in force (RLIMIT_FSIZE; 0: none).
	fileBytes uint64
	// settledMB is the budget the address-space limit was settled to ahead
	// of the request (settleAhead; 0: not settled).
	settledMB int
}

// settleAhead settles the address-space limit to the standby's budget
// before the request is read (see rewarm), so that the request does not
// pay for it.
func settleAhead(log hclog.Logger) {
	if mb := limited.memoryMB; mb > 0 && settleOSMemoryLimit(mb, log) == nil {
		limited.settledMB = mb
	}
}

// applyStandbyLimits sets, before any request exists, the limits that do
// not depend on one: the process limits, and the memory budget the front
// passed in the environment (its --worker-memory-mb), counted from the
// address space mapped now, with the database already open.
func applyStandbyLimits(env ipc.WorkerEnv, memoryErr error, log hclog.Logger) error {
	if err := applyProcessLimits(env.FrontPID, log); err != nil {
		return err
	}
	limited.process = true
	if memoryErr != nil {
		return memoryErr
	}
	if env.MemoryMB == 0 {
		return nil
	}
	return applyMemoryLimit(env.MemoryMB, log)
}

// applyLimits limits this process for req before any of its SQL runs:
// what the standby phase could not (the largest file it may write depends
// on the database's size now), and everything when this worker was started
// without a front (a standalone worker).
func applyLimits(req *ipc.Request, frontPID int, log hclog.Logger) error {
	fail := func(err error) error {
		return errcode.New(errcode.WorkerFailed, "could not limit the worker: "+err.Error())
	}
	if !limited.process {
		if err := applyProcessLimits(frontPID, log); err != nil {
			return fail(err)
		}
		limited.process = true
	}
	switch mb := req.Limits.MemoryMB; {
	case mb <= 0:
	case mb == limited.memoryMB:
		// Set before the request; a worker the front limits checks it.
		if err := applyOSMemoryLimit(mb, log); err != nil {
			return fail(err)
		}
	case limited.memoryMB > 0 && mb > limited.memoryMB:
		return errcode.New(errcode.WorkerFailed, fmt.Sprintf("the request asks for a %d MiB memory budget, more than the %d MiB this worker was started with; the server and its worker must run with the same --worker-memory-mb", mb, limited.memoryMB))
	default:
		if err := applyMemoryLimit(mb, log); err != nil {
			return fail(err)
		}
	}
	if mb := req.Limits.MemoryMB; mb > 0 && mb != limited.settledMB {
		// Last, so that the statement gets its budget from what is
		// mapped now (unless the prewake did that a moment ago).
		if err := settleOSMemoryLimit(mb, log); err != nil {
			return fail(err)
		}
	}
	if err := applyFileLimit(req, log); err != nil {
		return fail(err)
	}
	return nil
}

// oomCheckEvery is how many SQLite instructions run between two checks of
// the allocation watch: about a millisecond of stepping, so a statement
// whose allocation failed stops well within 250 ms of it, while the check
// (a status read) costs under 0.1 % of the run.
const oomCheckEvery = 10000

// heapLimit is SQLite's hard heap limit for a budget of so many bytes:
// below it, so that the Go runtime has room left when SQLite stops.
func heapLimit(budget int64) int64 { return budget * 3 / 4 }

// applyMemoryLimit caps the worker at mb MiB: the OS limit of the platform,
// then SQLite's own hard heap limit below it, so that a memory bomb usually
// meets SQLite's clean "out of memory" before the OS limit. An allocation
// refused at that limit stops the statement within oomCheckEvery
// instructions (the connection's allocation watch, openConn): accumulators
// such as group_concat and json_group_array only record the failure and
// would otherwise read their whole input, an endless one until the
// timeout, before reporting it.
func applyMemoryLimit(mb int, log hclog.Logger) error {
	if err := applyOSMemoryLimit(mb, log); err != nil {
		return err
	}
	rawsqlite.SetHardHeapLimit(heapLimit(int64(mb) << 20))
	// A worker lives for one statement: collecting garbage before its heap
	// nears the budget is wasted work (GC was 40% of a 100k-row export).
	// SQLite's memory is not Go heap, so half the budget.
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(int64(mb) << 20 / 2)
	limited.memoryMB = mb
	log.Debug("memory limit applied", "memory_mb", mb)
	return nil
}
