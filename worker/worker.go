package worker

import (
	"errors"
	"fmt"
	"io"
	"runtime/debug"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/version"
)

// Executor runs a worker process's one request behind ipc.Serve, which
// holds the protocol's child side:
//
//	os.Exit(ipc.Serve(os.Stdin, os.Stdout, os.Stderr, worker.Executor{}, worker.Help))
//
// Everything the request does not change happens in Prepare, before it is
// read, so that a standby worker has done it while it waited:
// confinement, the process and memory limits, the database connection
// with its backstops, the JSON codec. After the request only what depends
// on it runs, and the response is written before the connection is
// closed.
type Executor struct{}

var _ ipc.Executor = Executor{}

// Prepare confines the process and prepares what the request will use.
func (Executor) Prepare(env ipc.WorkerEnv, envErrs ipc.WorkerEnvErrors, log hclog.Logger) (standbyErr, fatal error) {
	if err := startSandbox(env, envErrs.Sandbox, log); err != nil {
		// Refuse to run unconfined when confinement was asked for.
		return nil, errcode.New(errcode.WorkerFailed, "the worker sandbox could not be set up: "+err.Error())
	}
	// A limit that cannot be set fails the request, not the standby: the
	// call that takes this worker gets the reason.
	// The last wall goes up while the database opens and the limits are
	// set (everything they call is in the allowlist), so that its cost
	// (mostly the kernel's JIT) hides behind theirs where a core is free;
	// it is in place, on every thread, before the ready byte and the
	// request.
	filtered := make(chan error, 1)
	go func() { filtered <- confineSyscalls(sandboxState, log) }()
	if err := prepare(env, envErrs.MemoryMB, log); err != nil {
		standbyErr = errcode.New(errcode.WorkerFailed, "could not limit the worker: "+err.Error())
	}
	if err := <-filtered; err != nil {
		return nil, errcode.New(errcode.WorkerFailed, "the worker sandbox could not be set up: "+err.Error())
	}
	return standbyErr, nil
}

// Admit checks the request against the sandbox the worker runs in.
func (Executor) Admit(req *ipc.Request, env ipc.WorkerEnv, log hclog.Logger) error {
	return admit(req, env.TempDir, log)
}

// Rewarm runs the standby's warm-up statement again (see rewarm).
func (Executor) Rewarm(log hclog.Logger, arrived func() bool) { rewarm(log, arrived) }

// Run applies the limits that depend on req, then executes it.
func (Executor) Run(req *ipc.Request, env ipc.WorkerEnv, log hclog.Logger, progress io.Writer) (*ipc.Response, func()) {
	return run(req, env.FrontPID, log, progress)
}

// Main is a worker process: ipc.Serve with this package's Executor.
func Main(stdin io.Reader, stdout, stderr io.Writer) int {
	return ipc.Serve(stdin, stdout, stderr, Executor{}, Help)
}

// Help is the worker binary's help text (--help).
const Help = `mcp-sqlite-memory-worker runs one statement for mcp-sqlite-memory: the server
starts it, sandboxed, writes one JSON request frame to its stdin and reads
the answer (CSV or JSON inside a JSON frame) from its stdout. It is not
meant to be run by hand; run the server instead:

  mcp-sqlite-memory --db PATH            serve MCP over stdio
  mcp-sqlite-memory call --db PATH TOOL 'JSON'   one tool call from a shell

A request piped to it (as fuzzers do) gets a JSON frame answer, failures
included, and exit status 0; worker/README.md describes the frames.
--version prints the version and commit of this build.
`

// Args handles command-line arguments, which the server never passes:
// --help (or -h, help) prints Help, --version the build's version line;
// anything else is a usage error (2).
func Args(args []string, stdout, stderr io.Writer) int {
	switch args[0] {
	case "--help", "-help", "-h", "help":
		fmt.Fprint(stdout, Help)
		return 0
	case "--version", "-version", "version":
		fmt.Fprintln(stdout, version.Line("mcp-sqlite-memory-worker"))
		return 0
	}
	fmt.Fprintf(stderr, "mcp-sqlite-memory-worker: unexpected argument %q; it takes none\n\n%s", args[0], Help)
	return 2
}

// run applies the limits that depend on req, then executes it. It returns
// the response and the function that releases the connection, to be called
// once the response is written. frontPID is the front's pid, if it said.
func run(req *ipc.Request, frontPID int, log hclog.Logger, progress io.Writer) (*ipc.Response, func()) {
	if err := applyLimits(req, frontPID, log); err != nil {
		return ipc.Failure(err), func() {}
	}
	ipc.StampWorker(ipc.StepLimited)
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
			resp = ipc.Failure(errcode.New(errcode.WorkerFailed, "the worker hit an internal error; the statement did not complete"))
		}
	}()
	ex, err := open(req, log)
	if err != nil {
		return ipc.Failure(err), release
	}
	release = ex.close
	ipc.StampWorker(ipc.StepReady)
	ex.progress = &reporter{w: progress}
	// What the standby phase allocated is no failure of this request's.
	rawsqlite.ResetAllocationWatch()
	armMemoryAlert(req, ex.progress)

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
		if req.Judge {
			resp, err = ex.judge()
		} else {
			resp, err = ex.query()
		}
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
		err = errcode.New(errcode.InvalidArgument, "unknown op "+string(req.Op))
	}
	if err != nil {
		r := ipc.Failure(ex.classify(err))
		r.Detail = ex.detail
		return r, release
	}
	resp.OK = true
	return resp, release
}

// armMemoryAlert has the allocation watch write the memory alert
// (ipc.PhaseMemoryHigh) when SQLite's memory in use reaches alertMark, or
// a statement meets the heap limit. A worker that dies of memory
// exhaustion after it (the Go runtime's allocation refused under the OS
// limit) is then RESOURCE_LIMIT at the front, by that frame. Only a
// request with a budget; any other removes a mark left before.
func armMemoryAlert(req *ipc.Request, progress *reporter) {
	budget := int64(req.Limits.MemoryMB) << 20
	if budget <= 0 {
		rawsqlite.SetMemoryHighMark(0, nil)
		return
	}
	rawsqlite.SetMemoryHighMark(alertMark(budget), func(used int64) { progress.memoryHigh(used, budget) })
}

// alertMark is the memory alert's mark for a budget of so many bytes: a
// sixteenth of it, far below the heap limit, since SQLite counts what it
// holds and the address space is what runs out. A growing buffer is
// copied (modernc's realloc is malloc, copy, free), so its old and new
// blocks are mapped at once: the OS limit refused the accumulator bombs
// (tests/membomb_test.go) when SQLite counted 7-24 % of a 128 or 256 MiB
// budget, and the runtime's own allocation can be refused there too. A
// low mark costs nothing: the alert only names the cause of a death.
func alertMark(budget int64) int64 { return budget / 16 }

// classify turns a SQLite error into the agent's error code.
func (ex *executor) classify(err error) error {
	var coded *errcode.Error
	if errors.As(err, &coded) {
		return coded
	}
	if v := ex.violation(); v != nil {
		return v
	}
	var se *rawsqlite.Error
	if !errors.As(err, &se) {
		return errcode.New(errcode.WorkerFailed, err.Error())
	}
	if errors.Is(err, rawsqlite.ErrStoppedAtHeapLimit) {
		return errcode.New(errcode.ResourceLimit, fmt.Sprintf("out of memory: the statement reached the worker's memory limit (%d MiB, --worker-memory-mb) and was stopped there; narrow the query: aggregate fewer rows (a WHERE, or LIMIT in a subquery), smaller values, no huge strings or blobs", ex.req.Limits.MemoryMB))
	}
	switch se.Primary() {
	case rawsqlite.ResultInterrupt:
		return errcode.QueryTimeout(time.Duration(ex.req.Limits.TimeoutMS)*time.Millisecond, "interrupted")
	case rawsqlite.ResultNoMem:
		return errcode.New(errcode.ResourceLimit, fmt.Sprintf("out of memory (worker limit %d MiB, --worker-memory-mb); narrow the query: fewer rows, smaller aggregates, no huge strings or blobs", ex.req.Limits.MemoryMB))
	case rawsqlite.ResultFull:
		return errcode.New(errcode.ResourceLimit, fmt.Sprintf("the statement would grow the database by more than --max-growth-mb=%d MiB; the change was rolled back. Write less per statement", ex.req.Limits.MaxGrowthMB))
	case rawsqlite.ResultAuth:
		return errcode.New(errcode.Policy, se.Msg+"; the statement uses something no tool allows")
	case rawsqlite.ResultBusy, rawsqlite.ResultLocked:
		return errcode.New(errcode.DatabaseUnavailable, se.Msg+"; another writer holds the database, retry the call")
	case rawsqlite.ResultIOErr:
		if pastFileLimit(se.SysErrno) {
			// A temporary file (a big sort, DISTINCT, GROUP BY, index
			// build) met the file-size limit; the database is fine.
			return errcode.New(errcode.ResourceLimit, fmt.Sprintf("the statement's temporary data outgrew the worker's file limit (%d MiB, from --max-growth-mb=%d); nothing was changed. Narrow the query: fewer or smaller rows, or ORDER BY ... LIMIT, which sorts only the rows it keeps", limited.fileBytes>>20, ex.req.Limits.MaxGrowthMB))
		}
		return errcode.New(errcode.DatabaseUnavailable, se.Msg)
	case rawsqlite.ResultNotADB, rawsqlite.ResultCorrupt, rawsqlite.ResultCantOpen:
		return errcode.New(errcode.DatabaseUnavailable, se.Msg)
	case rawsqlite.ResultReadOnly:
		return errcode.New(errcode.ReadOnly, se.Msg+"; this database is read-only")
	}
	if strings.HasPrefix(se.Msg, "no such table: ") {
		// Both profiles have list_tables; the policy's TABLE_NOT_FOUND
		// path says the same.
		return errcode.New(errcode.SQL, se.Msg+"; list_tables shows the tables")
	}
	return errcode.New(errcode.SQL, se.Msg+matchHint(se.Msg, ex.req.SQL))
}

// fts5Syntax is the hint for a full-text query that FTS5 could not parse.
const fts5Syntax = "FTS5 query syntax: words (all must match), OR and NOT in capitals, \"a phrase\", prefix*, NEAR(a b, 5), column:word (e.g. kind:decision); put a word with punctuation in double quotes inside the string: MATCH '\"max-events\"'"

// matchHint adds how to write a MATCH string when an error came from one.
// FTS5 reads a hyphen as a column filter, so MATCH 'max-events' fails as
// "no such column: events"; the SQL is only looked at for MATCH to pick
// the friendlier text, never to decide anything.
func matchHint(msg, sql string) string {
	switch {
	case strings.HasPrefix(msg, "fts5: syntax error"), strings.HasPrefix(msg, "unknown special query"):
		return "; " + fts5Syntax
	case strings.HasPrefix(msg, "no such column") && strings.Contains(strings.ToUpper(sql), "MATCH"):
		return "; if the name comes from a MATCH string, a hyphen or colon there starts a column filter. " + fts5Syntax
	case strings.HasPrefix(msg, "unable to use function MATCH"):
		return "; MATCH needs a full-text table on its left: WHERE memory_events_fts MATCH 'words' (join memory_events ON id = memory_events_fts.rowid for the other columns)"
	}
	return ""
}
