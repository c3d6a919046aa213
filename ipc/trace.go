package ipc

import (
	"context"
	"sync"
	"time"
)

// Call tracing: when MCP_SQLITE_CALLTRACE names a file, the front writes
// one JSON line per tool call with the wall-clock time (Unix nanoseconds,
// the same clock in every process of the machine) of each step of the
// call, front and worker. It is how docs/performance.md's breakdown of a
// paced call is measured, and what BenchmarkCallLatency reads for the
// worker's share. Nothing is stamped when it is off.

// WorkerStamps are the worker's steps of one request, stamped when the
// request asked for them (Request.Trace).
type WorkerStamps struct {
	Woken    int64 `json:"woken,omitempty"`    // the prewake byte was read (0: none came)
	Rewarmed int64 `json:"rewarmed,omitempty"` // the warm-up it started is over
	Read     int64 `json:"read"`               // the request's bytes were read (the wake-up)
	Decoded  int64 `json:"decoded"`            // and decoded
	Admitted int64 `json:"admitted"`           // checked against the sandbox (Admit)
	Limited  int64 `json:"limited"`            // the limits that depend on it set
	Ready    int64 `json:"ready"`              // the connection readied for its mode and policy
	Compiled int64 `json:"compiled"`           // the statement compiled
	Stepped  int64 `json:"stepped"`            // every row stepped and rendered
	Answered int64 `json:"answered"`           // the response built, about to be written
	// Faults are the page faults the process took between the request's
	// read and its response (minor and major; -1 where not counted).
	Faults       int64 `json:"faults"`
	faultsAtRead int64
}

// now is a stamp: wall-clock Unix nanoseconds.
func now() int64 { return time.Now().UnixNano() }

// CallTrace is one traced call's stamps, front and worker.
type CallTrace struct {
	Tool string `json:"tool"`
	// Received: the request's line was read from the client.
	Received int64 `json:"received"`
	// Dispatched: the read loop took the line; Running: the request's
	// goroutine started (stdio only).
	Dispatched int64 `json:"dispatched,omitempty"`
	Running    int64 `json:"running,omitempty"`
	// Handler: the tool's handler started.
	Handler int64 `json:"handler"`
	// Taken: a worker was taken from the pool (0: the call used none).
	Taken int64 `json:"taken,omitempty"`
	// Prewoken: the worker was nudged (Spawner.Prewake; 0: it was not).
	Prewoken int64 `json:"prewoken,omitempty"`
	// HandedOff: the request is about to be written to the worker.
	HandedOff int64 `json:"handed_off,omitempty"`
	// Back: the worker's whole response was read.
	Back int64 `json:"back,omitempty"`
	// Auditing: the handler is about to queue the call's audit row.
	Auditing int64 `json:"auditing,omitempty"`
	// Returned: the handler returned (its audit row queued, not written).
	Returned int64 `json:"returned"`
	// Written: the reply's write to the client began (stdio; after the
	// handler for HTTP).
	Written int64         `json:"written"`
	Worker  *WorkerStamps `json:"worker,omitempty"`
}

type traceKey struct{}

// WithTrace returns ctx carrying t: the worker call made with it (Run)
// stamps its steps into t.
func WithTrace(ctx context.Context, t *CallTrace) context.Context {
	return context.WithValue(ctx, traceKey{}, t)
}

// TraceFrom returns the trace ctx carries, or nil.
func TraceFrom(ctx context.Context) *CallTrace {
	t, _ := ctx.Value(traceKey{}).(*CallTrace)
	return t
}

// Now is a trace's stamp of the time now: wall-clock Unix nanoseconds.
func Now() int64 { return now() }

// Step is a worker step that StampWorker records.
type Step int

// Worker steps, in the order a request passes them.
const (
	StepAdmitted Step = iota
	StepLimited
	StepReady
	StepCompiled
	StepStepped
	StepAnswered
)

// workerStamps are this worker process's stamps (nil: the request did not
// ask). A worker serves one request, so one set per process.
var (
	workerStampsMu sync.Mutex
	workerStamps   *WorkerStamps
)

// StampWorker records the time now as step's, when this worker's request
// asked for a trace.
func StampWorker(step Step) {
	workerStampsMu.Lock()
	defer workerStampsMu.Unlock()
	w := workerStamps
	if w == nil {
		return
	}
	t := now()
	switch step {
	case StepAdmitted:
		w.Admitted = t
	case StepLimited:
		w.Limited = t
	case StepReady:
		w.Ready = t
	case StepCompiled:
		w.Compiled = t
	case StepStepped:
		w.Stepped = t
	case StepAnswered:
		w.Answered = t
		if f := pageFaults(); f >= 0 && w.faultsAtRead >= 0 {
			w.Faults = f - w.faultsAtRead
		} else {
			w.Faults = -1
		}
	}
}

// takeWorkerStamps returns this worker's stamps, for its response.
func takeWorkerStamps() *WorkerStamps {
	workerStampsMu.Lock()
	defer workerStampsMu.Unlock()
	return workerStamps
}
