package ipc

import (
	"bytes"
	"fmt"
	"io"
	"os"

	"github.com/hashicorp/go-hclog"
)

// The child side of the worker protocol: what a worker process does
// between its start and its exit, around the executor (package worker)
// that runs the request. The host side is Spawner, the pool and process.

// Executor is what runs a worker process's one request. Package worker
// implements it; Serve drives it.
type Executor interface {
	// Prepare does everything the request does not change, before it is
	// read, so that a standby has done it while it waited: confinement,
	// the process and memory limits, the database connection with its
	// backstops. A fatal error means the worker must not run at all (a
	// sandbox that was asked for and could not be set up): Serve answers
	// it and exits 1. A standby error fails the request that comes.
	Prepare(env WorkerEnv, envErrs WorkerEnvErrors, log hclog.Logger) (standbyErr, fatal error)
	// Admit checks the request against what Prepare set up.
	Admit(req *Request, env WorkerEnv, log hclog.Logger) error
	// Rewarm touches again, after the front's PrewakeByte, what the
	// request will use, and stops as soon as arrived reports that the
	// request is there; it runs nothing of the agent's.
	Rewarm(log hclog.Logger, arrived func() bool)
	// Run runs the request and returns its response and the function that
	// releases its connection, called once the response is written.
	// Progress frames go to progress (nil: none).
	Run(req *Request, env WorkerEnv, log hclog.Logger, progress io.Writer) (*Response, func())
}

// Serve is a worker process: it reads what the front said in the
// environment (DecodeWorkerEnv), logs to stderr as hclog JSON (which the
// front re-logs), prepares, says it is ready (SignalReady), reads one
// request from stdin, runs it and writes one response to stdout. The exit
// status is 0 whenever a response was written, failures included; a
// person typing at it (a terminal on stdin) gets help instead, and 2.
func Serve(stdin io.Reader, stdout, stderr io.Writer, ex Executor, help string) int {
	// What the front said before any request, read once.
	env, envErrs := DecodeWorkerEnv(os.Getenv)
	log := hclog.New(&hclog.LoggerOptions{
		Name:       "worker",
		Output:     stderr,
		JSONFormat: true,
		Level:      hclog.LevelFromString(env.LogLevel),
	})
	standbyErr, fatal := ex.Prepare(env, envErrs, log)
	if fatal != nil {
		_ = WriteResponse(stdout, Failure(fatal))
		return 1
	}
	if err := env.SignalReady(stdout); err != nil {
		log.Error("telling the server this worker is ready failed", "error", err)
		return 1
	}
	req, err := ReadRequest(prewakeFirst(stdin, ex, log))
	if err != nil && isTerminal(stdin) {
		// A person typing, not the server or a fuzzer (they pipe): words
		// and a failing status rather than a frame.
		fmt.Fprintf(stderr, "mcp-sqlite-memory-worker: not a worker request: %v\n\n%s", err, help)
		return 2
	}
	if err == nil {
		err = ex.Admit(req, env, log)
		StampWorker(StepAdmitted)
	}
	if err == nil && standbyErr != nil {
		err = standbyErr
	}
	var resp *Response
	release := func() {}
	if err != nil {
		resp = Failure(err)
	} else {
		resp, release = ex.Run(req, env, log, stdout)
	}
	resp.Version = Version
	StampWorker(StepAnswered)
	resp.Trace = takeWorkerStamps()
	werr := WriteResponse(stdout, resp)
	// Writes were committed before the response was built; closing the
	// connection is no part of the answer.
	release()
	if werr != nil {
		log.Error("writing the response failed", "error", werr)
		return 1
	}
	return 0
}

// IsTerminal reports whether f is a terminal (a console on Windows): the
// server's front uses it to greet a person who started it by hand, and a
// worker to answer one with help.
func IsTerminal(f *os.File) bool { return terminal(f) }

// isTerminal reports whether r is a terminal (see terminal for each OS).
func isTerminal(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && terminal(f)
}

// prewakeFirst reads stdin's first byte: if it is PrewakeByte alone (the
// front's nudge, Spawner.Prewake), the executor warms up again before the
// request is read; the reader returned yields the request from there on,
// and any other first byte as part of it.
func prewakeFirst(stdin io.Reader, ex Executor, log hclog.Logger) io.Reader {
	var first [1]byte
	n, err := stdin.Read(first[:])
	switch {
	case n == 1 && first[0] == PrewakeByte:
		woken := now()
		ex.Rewarm(log, func() bool { return pending(stdin) })
		prewoke = [2]int64{woken, now()}
		return stdin
	case n == 1:
		return io.MultiReader(bytes.NewReader(first[:]), stdin)
	case err != nil:
		return errReader{err}
	}
	return stdin
}

// prewoke is when this worker read the prewake byte and when its rewarm
// ended, for the call trace (zero: no prewake).
var prewoke [2]int64

type errReader struct{ err error }

func (r errReader) Read([]byte) (int, error) { return 0, r.err }
