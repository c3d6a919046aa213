package worker

import (
	"errors"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Main reads one request from stdin, executes it and writes one response to
// stdout. Logs go to stderr as hclog JSON, which the front re-logs. The exit
// status is 0 whenever a response was written, failures included.
//
// Everything the request does not change happens before it is read, so
// that a standby worker has done it while it waited: confinement, the
// process and memory limits, the database connection with its backstops,
// the JSON codec. After the request only what depends on it runs, and the
// response is written before the connection is closed.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	log := hclog.New(&hclog.LoggerOptions{
		Name:       "worker",
		Output:     stderr,
		JSONFormat: true,
		Level:      hclog.LevelFromString(os.Getenv("MCP_SQLITE_WORKER_LOG_LEVEL")),
	})
	if err := startSandbox(log); err != nil {
		// Refuse to run unconfined when confinement was asked for.
		_ = ipc.WriteResponse(stdout, ipc.Failure(ipc.NewError(ipc.CodeWorkerFailed, "the worker sandbox could not be set up: "+err.Error())))
		return 1
	}
	// A limit that cannot be set fails the request, not the standby: the
	// call that takes this worker gets the reason.
	standbyErr := prepare(log)
	if err := ipc.SignalReady(stdout, os.Getenv); err != nil {
		log.Error("telling the front this worker is ready failed", "error", err)
		return 1
	}
	req, err := ipc.ReadRequest(stdin)
	if err == nil {
		err = admit(req, log)
	}
	if err == nil && standbyErr != nil {
		err = ipc.NewError(ipc.CodeWorkerFailed, "could not limit the worker: "+standbyErr.Error())
	}
	var resp *ipc.Response
	version := ipc.Version
	release := func() {}
	if err != nil {
		resp = ipc.Failure(err)
	} else {
		// A version-1 request gets a version-1 answer: no progress frames.
		var progress io.Writer
		if req.Version >= 2 {
			progress = stdout
		}
		version = req.Version
		resp, release = run(req, log, progress)
	}
	resp.Version = version
	werr := ipc.WriteResponse(stdout, resp)
	// Writes were committed before the response was built; closing the
	// connection is no part of the answer.
	release()
	if werr != nil {
		log.Error("writing the response failed", "error", werr)
		return 1
	}
	return 0
}

// Execute runs req and always returns a response. It applies the process
// limits first, so call it only in a process of its own. Progress frames go
// to progress before the caller writes the response; nil writes none.
func Execute(req *ipc.Request, log hclog.Logger, progress io.Writer) *ipc.Response {
	resp, release := run(req, log, progress)
	release()
	return resp
}

// run applies the limits that depend on req, then executes it. It returns
// the response and the function that releases the connection, to be called
// once the response is written.
func run(req *ipc.Request, log hclog.Logger, progress io.Writer) (*ipc.Response, func()) {
	if err := applyLimits(req, log); err != nil {
		return ipc.Failure(err), func() {}
	}
	return executeHeld(req, log, progress)
}

// execute runs req in this process as it is (tests call it directly).
func execute(req *ipc.Request, log hclog.Logger) *ipc.Response {
	resp, release := executeHeld(req, log, nil)
	release()
	return resp
}

// executeHeld runs req and returns its response with the connection still
// open; release closes it. Progress frames go to progress (nil: none).
func executeHeld(req *ipc.Request, log hclog.Logger, progress io.Writer) (resp *ipc.Response, release func()) {
	release = func() {}
	defer func() {
		if r := recover(); r != nil {
			log.Error("worker panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp = ipc.Failure(ipc.NewError(ipc.CodeWorkerFailed, "the worker hit an internal error; the statement did not complete"))
		}
	}()
	ex, err := open(req, log)
	if err != nil {
		return ipc.Failure(err), release
	}
	release = ex.close
	ex.progress = &reporter{w: progress}

	if req.Limits.TimeoutMS > 0 {
		// SQLite drops an interrupt that arrives between statements, so the
		// flag makes the next step fail too.
		ex.clock = time.AfterFunc(time.Duration(req.Limits.TimeoutMS)*time.Millisecond, func() {
			ex.timedOut.Store(true)
			ex.conn.Interrupt()
		})
		defer ex.clock.Stop()
	}
	switch req.Op {
	case ipc.OpQuery:
		resp, err = ex.query()
	case ipc.OpCreateView:
		resp, err = ex.createView()
	case ipc.OpListTables:
		resp, err = ex.listTables()
	case ipc.OpDescribeTable:
		resp, err = ex.describeTable()
	case ipc.OpSchema:
		resp, err = ex.schema()
	case ipc.OpSearch:
		resp, err = ex.search()
	case ipc.OpSnapshot:
		resp, err = ex.snapshotNow()
	default:
		err = ipc.NewError(ipc.CodeInvalidArgument, "unknown op "+req.Op)
	}
	if err != nil {
		r := ipc.Failure(ex.classify(err))
		r.Detail = ex.detail
		return r, release
	}
	resp.OK = true
	return resp, release
}

// classify turns a SQLite error into the agent's error code.
func (ex *executor) classify(err error) error {
	var coded *ipc.Error
	if errors.As(err, &coded) {
		return coded
	}
	if v := ex.violation(); v != nil {
		return v
	}
	var se *rawsqlite.Error
	if !errors.As(err, &se) {
		return ipc.NewError(ipc.CodeWorkerFailed, err.Error())
	}
	switch se.Primary() {
	case rawsqlite.ResultInterrupt:
		return ipc.NewError(ipc.CodeTimeout, fmt.Sprintf("query stopped after %s (interrupted); narrow the query, add a LIMIT, or raise --query-timeout", durationText(ex.req.Limits.TimeoutMS)))
	case rawsqlite.ResultNoMem:
		return ipc.NewError(ipc.CodeResourceLimit, fmt.Sprintf("out of memory (worker limit %d MiB); narrow the query: fewer rows, smaller aggregates, no huge strings or blobs", ex.req.Limits.MemoryMB))
	case rawsqlite.ResultFull:
		return ipc.NewError(ipc.CodeResourceLimit, fmt.Sprintf("the statement would grow the database by more than --max-growth-mb=%d MiB; the change was rolled back. Write less per statement", ex.req.Limits.MaxGrowthMB))
	case rawsqlite.ResultAuth:
		return ipc.NewError(ipc.CodePolicy, se.Msg+"; the statement uses something no tool allows")
	case rawsqlite.ResultBusy, rawsqlite.ResultLocked:
		return ipc.NewError(ipc.CodeDatabaseUnavailable, se.Msg+"; another writer holds the database, retry the call")
	case rawsqlite.ResultNotADB, rawsqlite.ResultCorrupt, rawsqlite.ResultCantOpen, rawsqlite.ResultIOErr:
		return ipc.NewError(ipc.CodeDatabaseUnavailable, se.Msg)
	case rawsqlite.ResultReadOnly:
		return ipc.NewError(ipc.CodeReadOnly, se.Msg+"; this database is read-only")
	}
	return ipc.NewError(ipc.CodeSQL, se.Msg)
}

func durationText(ms int64) string {
	if ms%1000 == 0 {
		return fmt.Sprintf("%ds", ms/1000)
	}
	return (time.Duration(ms) * time.Millisecond).String()
}
