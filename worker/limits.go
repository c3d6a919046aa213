package worker

import (
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// applyLimits limits this process before any SQL runs: the OS limits of the
// platform, then SQLite's own hard heap limit below them, so that a memory
// bomb usually meets SQLite's clean "out of memory" before the OS limit.
func applyLimits(req *ipc.Request, log hclog.Logger) error {
	if err := applyOSLimits(req, log); err != nil {
		return ipc.NewError(ipc.CodeWorkerFailed, "could not limit the worker: "+err.Error())
	}
	if mb := req.Limits.MemoryMB; mb > 0 {
		rawsqlite.SetHardHeapLimit(int64(mb) << 20 * 3 / 4)
		// A worker lives for one statement: collecting garbage before its
		// heap nears the budget is wasted work (GC was 40% of a 100k-row
		// export). SQLite's memory is not Go heap, so half the budget.
		debug.SetGCPercent(-1)
		debug.SetMemoryLimit(int64(mb) << 20 / 2)
	}
	return nil
}
