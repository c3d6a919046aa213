package server

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// TestRunFailureText: each way a worker gives no answer reads as the
// agent has always read it, under its code.
func TestRunFailureText(t *testing.T) {
	tests := []struct {
		name string
		err  *ipc.RunError
		want string
	}{
		{"statement timeout", &ipc.RunError{Reason: ipc.RunTimeout, Phase: ipc.PhaseStatement, Budget: 3 * time.Second},
			"TIMEOUT: query stopped after 3s (worker killed); narrow the query, add a LIMIT, or raise --query-timeout"},
		{"snapshot timeout", &ipc.RunError{Reason: ipc.RunTimeout, Phase: ipc.PhaseSnapshot, Budget: 1500 * time.Millisecond},
			"TIMEOUT: the snapshot was not complete after 1.5s (worker killed); nothing was changed and no partial snapshot is kept. Raise --snapshot-timeout, or free disk bandwidth"},
		{"cancelled while running", &ipc.RunError{Reason: ipc.RunCancelled, Phase: ipc.PhaseSnapshot},
			"CANCELLED: the call was cancelled; its worker was stopped and nothing it did was kept"},
		{"cancelled while waiting", &ipc.RunError{Reason: ipc.RunCancelled, Phase: ipc.PhaseWaiting},
			"CANCELLED: the call was cancelled before it ran"},
		{"out of memory", &ipc.RunError{Reason: ipc.RunOutOfMemory, Phase: ipc.PhaseStatement, Exit: "exit status 2"},
			"RESOURCE_LIMIT: the worker ran out of memory and was stopped; narrow the query (fewer rows, smaller aggregates)"},
		{"out of memory at a known limit", &ipc.RunError{Reason: ipc.RunOutOfMemory, Phase: ipc.PhaseStatement, Exit: "exit status 2", MemoryMB: 128},
			"RESOURCE_LIMIT: out of memory: the worker reached its memory limit (128 MiB, --worker-memory-mb) and was stopped; narrow the query: aggregate fewer rows (a WHERE, or LIMIT in a subquery), smaller values, no huge strings or blobs"},
		{"no answer", &ipc.RunError{Reason: ipc.RunNoAnswer, Phase: ipc.PhaseStatement, Exit: "exit status 2"},
			"WORKER_FAILED: the worker exited without an answer (exit status 2); the statement may be malformed in a way the worker could not report, try again or simplify it"},
		{"bad answer", &ipc.RunError{Reason: ipc.RunBadAnswer, Phase: ipc.PhaseStatement, Exit: "exit status 0", Err: errors.New("payload cut short: unexpected EOF")},
			"WORKER_FAILED: the worker sent an unreadable answer (payload cut short: unexpected EOF; exit status 0)"},
		{"not started", &ipc.RunError{Reason: ipc.RunNotStarted, Phase: ipc.PhaseWaiting, Budget: 10 * time.Second},
			"WORKER_FAILED: the worker did not start within 10s; the call was not run, try again"},
		{"shutting down", &ipc.RunError{Reason: ipc.RunShuttingDown, Phase: ipc.PhaseWaiting},
			"WORKER_FAILED: the server is shutting down; the call was not run"},
		{"start failed", &ipc.RunError{Reason: ipc.RunStartFailed, Phase: ipc.PhaseWaiting, Err: &os.PathError{Op: "fork/exec", Path: "/w", Err: os.ErrNotExist}},
			"WORKER_FAILED: could not start a worker process: fork/exec /w: file does not exist"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// As run returns it: wrapped, as the spawner might one day.
			got := agentError(fmt.Errorf("run: %w", tt.err))
			var e *errcode.Error
			if !errors.As(got, &e) {
				t.Fatalf("%v is no coded error", got)
			}
			if e.Error() != tt.want {
				t.Fatalf("got  %q\nwant %q", e.Error(), tt.want)
			}
			if e.Code != tt.err.ErrorCode() || !errors.Is(tt.err, e.Code) {
				t.Fatalf("code %s, the RunError's %s", e.Code, tt.err.ErrorCode())
			}
		})
	}
	t.Run("other errors pass", func(t *testing.T) {
		in := errcode.New(errcode.InvalidArgument, "the call's text is too long")
		if got := agentError(in); got != error(in) {
			t.Fatalf("got %v", got)
		}
	})
}
