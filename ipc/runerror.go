package ipc

import (
	"fmt"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// RunReason says why a request got no answer of its worker's own.
type RunReason int

// The reasons, each with its code ([RunError.ErrorCode]).
const (
	// RunTimeout: the worker was killed when its budget (Budget, of
	// Phase) ran out and KillGrace after it. TIMEOUT.
	RunTimeout RunReason = iota + 1
	// RunCancelled: the call's context ended, before the request reached
	// a worker (Phase is PhaseWaiting) or while one ran it (the worker was
	// killed). CANCELLED.
	RunCancelled
	// RunOutOfMemory: the worker died without an answer after its
	// memory alert (PhaseMemoryHigh). RESOURCE_LIMIT.
	RunOutOfMemory
	// RunNoAnswer: the worker exited (Exit) without writing an answer.
	// WORKER_FAILED.
	RunNoAnswer
	// RunBadAnswer: the worker wrote what is not an answer (Err says
	// how; Exit how it ended). WORKER_FAILED.
	RunBadAnswer
	// RunNotStarted: a worker the front started confined was not ready
	// within Budget (ReadyWait); the request was not sent. WORKER_FAILED.
	RunNotStarted
	// RunShuttingDown: the spawner is closed; the request was not sent.
	// WORKER_FAILED.
	RunShuttingDown
	// RunStartFailed: no worker process could be started (Err).
	// WORKER_FAILED.
	RunStartFailed
)

// PhaseWaiting is the Phase of a RunError whose request never reached a
// worker: the call was waiting for one. It is no progress frame's phase.
const PhaseWaiting Phase = "waiting"

var runReasons = map[RunReason]struct {
	name string
	code errcode.Code
}{
	RunTimeout:      {"timeout", errcode.Timeout},
	RunCancelled:    {"cancelled", errcode.Cancelled},
	RunOutOfMemory:  {"out of memory", errcode.ResourceLimit},
	RunNoAnswer:     {"no answer", errcode.WorkerFailed},
	RunBadAnswer:    {"bad answer", errcode.WorkerFailed},
	RunNotStarted:   {"not started", errcode.WorkerFailed},
	RunShuttingDown: {"shutting down", errcode.WorkerFailed},
	RunStartFailed:  {"start failed", errcode.WorkerFailed},
}

func (r RunReason) String() string {
	if d, ok := runReasons[r]; ok {
		return d.name
	}
	return fmt.Sprintf("RunReason(%d)", int(r))
}

// RunError is a request that got no answer of its worker's own: the
// spawner stopped the worker, the worker failed, or none could run the
// request. It says what happened, not what an agent should read: the
// server words it (a worker's own failed Response is no RunError).
// errors.Is and errcode.Of read its code.
type RunError struct {
	Reason RunReason
	// Phase is where the request was: PhaseWaiting (not yet sent to a
	// worker), PhaseSnapshot (a destructive query's snapshot) or
	// PhaseStatement (the statement, or the worker before any frame).
	Phase Phase
	// Budget is the time that ran out: the phase's budget (RunTimeout),
	// ReadyWait (RunNotStarted).
	Budget time.Duration
	// Exit is how the worker process ended ("exit status 2", "signal:
	// killed"), for RunOutOfMemory, RunNoAnswer and RunBadAnswer.
	Exit string
	// Err is the underlying failure: the bad answer's (RunBadAnswer), the
	// start's (RunStartFailed).
	Err error
	// MemoryMB is the worker's memory limit (RunOutOfMemory), 0 if unknown.
	MemoryMB int
}

// ErrorCode is the reason's code.
func (e *RunError) ErrorCode() errcode.Code {
	if d, ok := runReasons[e.Reason]; ok {
		return d.code
	}
	return errcode.WorkerFailed
}

// Is reports whether target is e's code, or an error with the same code.
func (e *RunError) Is(target error) bool { return e.ErrorCode().Is(target) }

func (e *RunError) Unwrap() error { return e.Err }

// Error is for logs and tests; the agent reads the server's wording.
func (e *RunError) Error() string {
	parts := []string{"worker run failed: " + e.Reason.String()}
	if e.Phase != "" {
		parts = append(parts, "phase "+string(e.Phase))
	}
	if e.Budget > 0 {
		parts = append(parts, "budget "+e.Budget.String())
	}
	if e.Exit != "" {
		parts = append(parts, e.Exit)
	}
	if e.Err != nil {
		parts = append(parts, e.Err.Error())
	}
	return strings.Join(parts, ", ")
}
