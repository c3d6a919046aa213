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
	preopen(log)
	req, err := ipc.ReadRequest(stdin)
	if err == nil {
		err = admit(req, log)
	}
	var resp *ipc.Response
	version := ipc.Version
	if err != nil {
		resp = ipc.Failure(err)
	} else {
		// A version-1 request gets a version-1 answer: no progress frames.
		var progress io.Writer
		if req.Version >= 2 {
			progress = stdout
		}
		version = req.Version
		resp = Execute(req, log, progress)
	}
	resp.Version = version
	if err := ipc.WriteResponse(stdout, resp); err != nil {
		log.Error("writing the response failed", "error", err)
		return 1
	}
	return 0
}

// Execute runs req and always returns a response. It applies the process
// limits first, so call it only in a process of its own. Progress frames go
// to progress before the caller writes the response; nil writes none.
func Execute(req *ipc.Request, log hclog.Logger, progress io.Writer) *ipc.Response {
	if err := applyLimits(req, log); err != nil {
		return ipc.Failure(err)
	}
	return executeTo(req, log, progress)
}

// execute runs req in this process as it is (tests call it directly).
func execute(req *ipc.Request, log hclog.Logger) *ipc.Response {
	return executeTo(req, log, nil)
}

func executeTo(req *ipc.Request, log hclog.Logger, progress io.Writer) (resp *ipc.Response) {
	defer func() {
		if r := recover(); r != nil {
			log.Error("worker panic", "panic", fmt.Sprint(r), "stack", string(debug.Stack()))
			resp = ipc.Failure(ipc.NewError(ipc.CodeWorkerFailed, "the worker hit an internal error; the statement did not complete"))
		}
	}()
	ex, err := open(req, log)
	if err != nil {
		return ipc.Failure(err)
	}
	defer ex.close()
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
	default:
		err = ipc.NewError(ipc.CodeInvalidArgument, "unknown op "+req.Op)
	}
	if err != nil {
		r := ipc.Failure(ex.classify(err))
		r.Detail = ex.detail
		return r
	}
	resp.OK = true
	return resp
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
