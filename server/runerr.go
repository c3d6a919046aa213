package server

import (
	"errors"
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// agentError words a request the spawner could not get answered (an
// *ipc.RunError) as the agent reads it: what happened, with the flag or
// the change that helps. Any other error is returned as it is.
func agentError(err error) error {
	var re *ipc.RunError
	if !errors.As(err, &re) {
		return err
	}
	return runFailure(re)
}

// runFailure is the text of one RunError, under the code the reason has.
func runFailure(e *ipc.RunError) *errcode.Error {
	var msg string
	switch e.Reason {
	case ipc.RunTimeout:
		if e.Phase == ipc.PhaseSnapshot {
			return errcode.SnapshotTimeout(e.Budget, true)
		}
		return errcode.QueryTimeout(e.Budget, "worker killed")
	case ipc.RunCancelled:
		msg = "the call was cancelled; its worker was stopped and nothing it did was kept"
		if e.Phase == ipc.PhaseWaiting {
			msg = "the call was cancelled before it ran"
		}
	case ipc.RunOutOfMemory:
		msg = "the worker ran out of memory and was stopped; narrow the query (fewer rows, smaller aggregates)"
		if e.MemoryMB > 0 {
			// A worker that died at its limit (the Go runtime's or libc's
			// allocation refused before SQLite's own heap limit).
			msg = fmt.Sprintf("out of memory: the worker reached its memory limit (%d MiB, --worker-memory-mb) and was stopped; narrow the query: aggregate fewer rows (a WHERE, or LIMIT in a subquery), smaller values, no huge strings or blobs", e.MemoryMB)
		}
	case ipc.RunNoAnswer:
		msg = "the worker exited without an answer (" + e.Exit + "); the statement may be malformed in a way the worker could not report, try again or simplify it"
	case ipc.RunBadAnswer:
		msg = "the worker sent an unreadable answer (" + errText(e.Err) + "; " + e.Exit + ")"
	case ipc.RunNotStarted:
		msg = fmt.Sprintf("the worker did not start within %s; the call was not run, try again", e.Budget)
	case ipc.RunShuttingDown:
		msg = "the server is shutting down; the call was not run"
	case ipc.RunStartFailed:
		msg = "could not start a worker process: " + errText(e.Err)
	default:
		msg = "the worker failed (" + e.Error() + "); try again"
	}
	return errcode.New(e.ErrorCode(), msg)
}

// errText is err's text, or "unknown" for none.
func errText(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}
