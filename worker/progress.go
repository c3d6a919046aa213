package worker

import (
	"io"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// progressEvery spaces progress frames: the front tells the client about
// once a second, so a few frames a second keep it current. A variable so
// that tests can see every frame.
var progressEvery = 250 * time.Millisecond

// reporter writes progress frames on the response stream, before the
// response. A nil reporter, or one without a writer (a test), writes
// nothing. It is used from the goroutine that writes the
// response only, so frames and response never interleave.
type reporter struct {
	w    io.Writer
	last time.Time
}

// report writes p if progressEvery has passed since the last frame, or
// always when force is set (phase changes, which the front's kill timer
// follows).
func (r *reporter) report(p ipc.Progress, force bool) {
	if r == nil || r.w == nil {
		return
	}
	now := time.Now()
	if !force && now.Sub(r.last) < progressEvery {
		return
	}
	r.last = now
	// A front that stopped reading is about to kill this worker anyway.
	_ = ipc.WriteProgress(r.w, p)
}

// memoryHigh writes the memory alert (ipc.PhaseMemoryHigh) at once. It is
// no progress, so the rate limit neither holds it back nor counts it.
func (r *reporter) memoryHigh(used, budget int64) {
	if r == nil || r.w == nil {
		return
	}
	_ = ipc.WriteProgress(r.w, ipc.Progress{Phase: ipc.PhaseMemoryHigh, Done: used, Total: budget})
}
