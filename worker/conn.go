package worker

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// busyTimeoutCap keeps lock waits well inside the query timeout.
const busyTimeoutCap = 5 * time.Second

// executor holds the one connection of this worker and its policy.
type executor struct {
	req  *ipc.Request
	log  hclog.Logger
	conn *rawsqlite.Conn
	mode policy.Mode

	auth *policy.Authorizer
	// agentPhase is true while the agent's statement compiles or steps: only
	// then does the policy decide. The worker's own statements (BEGIN,
	// COMMIT, catalogue reads) are built here and need no policing, and the
	// policy forbids transaction control.
	agentPhase bool
	// actions collects what the agent's statement asks the authorizer
	// while it compiles (destructive mode only): the undo record's plan.
	actions   []rawsqlite.AuthRequest
	compiling bool
	// timedOut is set when the request's time is up; clock sets it (nil
	// when the request has no timeout). A snapshot stops the clock and
	// starts it again when it is complete.
	timedOut atomic.Bool
	clock    *time.Timer
	// progress writes progress frames for the front.
	progress *reporter
	// dry watches a dry run (previewQuery); nil otherwise.
	dry *dryRun
	// detail is what a failed request still tells its audit row (the SQL a
	// search built, say).
	detail *ipc.Detail
	// copiedAgain says the full snapshot was copied a second time under
	// the write lock (see snapshot); the audit detail says so too.
	copiedAgain bool
	// foreign lists the snapshot-named files rotation did not trust (named
	// after the snapshot it kept); the answer reports them.
	foreign []string

	// What setup has done to conn so far, so that a connection a standby
	// readied ahead is only changed where the request differs: the busy
	// timeout in force, whether query_only is on, whether the authorizer
	// (which asks ex.auth) is installed.
	busy       time.Duration
	queryOnly  bool
	authorizer bool
}

func open(req *ipc.Request, log hclog.Logger) (*executor, error) {
	mode, err := policy.ParseMode(modeOf(req))
	if err != nil {
		return nil, errcode.New(errcode.InvalidArgument, err.Error())
	}
	ex := takePreopened(req)
	if ex == nil {
		conn, err := openConn(req.DB, req.ReadOnlyFile)
		if err != nil {
			return nil, err
		}
		ex = &executor{conn: conn}
	}
	ex.req, ex.log, ex.mode = req, log, mode
	if err := ex.setup(); err != nil {
		ex.conn.Close()
		return nil, err
	}
	return ex, nil
}

// openConn opens the database (never creating it) with the backstops every
// worker connection carries (SPEC 4), before any authorizer goes in.
func openConn(path string, readOnly bool) (*rawsqlite.Conn, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, errcode.New(errcode.DatabaseUnavailable, "database file not found: "+path)
	}
	flags := rawsqlite.ReadWrite
	if readOnly {
		flags = rawsqlite.ReadOnly
	}
	c, err := rawsqlite.Open(path, flags)
	if err != nil {
		return nil, errcode.New(errcode.DatabaseUnavailable, "cannot open the database: "+err.Error())
	}
	fail := func(what string, err error) (*rawsqlite.Conn, error) {
		c.Close()
		return nil, errcode.New(errcode.DatabaseUnavailable, what+": "+err.Error())
	}
	if _, err := c.DBConfig(rawsqlite.ConfigDefensive, true); err != nil {
		return fail("defensive mode", err)
	}
	if _, err := c.DBConfig(rawsqlite.ConfigTrustedSchema, false); err != nil {
		return fail("trusted_schema", err)
	}
	c.Limit(rawsqlite.LimitAttached, 0)
	if err := c.Exec("PRAGMA foreign_keys=ON"); err != nil {
		return fail("foreign keys", err)
	}
	// An agent's write is answered "ok" only once its commit is on disk
	// (SPEC 5): FULL syncs the WAL (or, in rollback mode, the journal and
	// the database) at every commit. It is SQLite's default; set here so
	// that no build option or default of the library can weaken it, and
	// the agent cannot change it (the policy refuses PRAGMA with a value).
	if err := c.Exec("PRAGMA synchronous=FULL"); err != nil {
		return fail("synchronous", err)
	}
	if err := declareInnocuousFTSFunctions(c); err != nil {
		return fail("full-text functions", err)
	}
	// A statement whose allocation failed at the heap limit stops at once
	// (RESOURCE_LIMIT), instead of reading the rest of its input with an
	// accumulator that gave up (limits.go, applyMemoryLimit).
	if err := c.StopOnAllocationFailure(oomCheckEvery); err != nil {
		return fail("allocation watch", err)
	}
	return c, nil
}

// ftsFunctions are the SQL functions FTS5 overloads: the MATCH operator
// and its auxiliary functions. All of them only read the full-text index.
var ftsFunctions = []struct {
	name string
	args int
}{{"match", 2}, {"bm25", -1}, {"highlight", -1}, {"snippet", -1}, {"fts5_get_locale", -1}}

// declareInnocuousFTSFunctions lets views use full-text search. Under
// trusted_schema=OFF, SQLite allows only SQLITE_INNOCUOUS functions inside
// views and triggers, and the placeholders FTS5 declares for MATCH and its
// auxiliary functions (sqlite3_overload_function) are not flagged, so a
// view with "WHERE ft MATCH 'x'" could be stored but never read ("unsafe
// use of MATCH()"). The placeholders are declared again, flagged innocuous:
// these functions only read the index. trusted_schema stays OFF for
// everything else, and the authorizer judges every action inside a view
// when a statement expands it.
func declareInnocuousFTSFunctions(c *rawsqlite.Conn) error {
	for _, f := range ftsFunctions {
		if err := c.OverloadInnocuous(f.name, f.args); err != nil {
			return err
		}
	}
	return nil
}

// modeOf is the policy mode an operation runs under.
func modeOf(req *ipc.Request) string {
	switch req.Op {
	case ipc.OpQuery:
		return string(req.Mode)
	case ipc.OpCreateView:
		return policy.Write.String()
	}
	if req.ReadOnlyFile {
		return policy.Select.String()
	}
	return policy.Read.String()
}

func (ex *executor) close() {
	// The memory alert writes to this request's response stream.
	rawsqlite.SetMemoryHighMark(0, nil)
	_ = ex.conn.Close()
}

// setup readies the connection for this request: lock waits within its
// timeout, query_only or the growth cap, then a fresh policy of its mode
// behind the authorizer. What a standby readied ahead for the same request
// shape (see readyAhead) is not done twice.
func (ex *executor) setup() error {
	c := ex.conn
	busy := time.Duration(ex.req.Limits.TimeoutMS) * time.Millisecond
	if busy <= 0 || busy > busyTimeoutCap {
		busy = busyTimeoutCap
	}
	if busy != ex.busy {
		if err := c.BusyTimeout(busy); err != nil {
			return err
		}
		ex.busy = busy
	}
	if ex.req.Cluster && !ex.req.Judge && ex.mode > policy.Read {
		return errcode.New(errcode.InvalidArgument, "in a cluster the worker never writes: a writing statement is judged (judge) and the front sends it to the cluster")
	}
	// A judge compiles and never runs: its connection cannot write either.
	if readOnly := ex.mode <= policy.Read || ex.req.Judge; readOnly != ex.queryOnly {
		pragma := "PRAGMA query_only=0"
		if readOnly {
			pragma = "PRAGMA query_only=1"
		}
		if err := c.Exec(pragma); err != nil {
			return ex.classify(err)
		}
		ex.queryOnly = readOnly
	}
	if ex.mode > policy.Read && !ex.req.Judge {
		if err := ex.capGrowth(); err != nil {
			return err
		}
	}
	var opts policy.Options
	if ex.mode >= policy.Write {
		shadow, err := ex.shadowTables()
		if err != nil {
			return err
		}
		opts.ShadowTables = shadow
	}
	if ex.req.Op == ipc.OpCreateView && ex.req.View != nil {
		opts.CreateView = ex.req.View.Name
	}
	ex.auth = policy.New(ex.mode, opts)
	if ex.authorizer {
		return nil
	}
	if err := c.SetAuthorizer(func(r rawsqlite.AuthRequest) int {
		if !ex.agentPhase {
			return rawsqlite.AuthOK
		}
		if ex.compiling && ex.mode == policy.Destructive {
			ex.actions = append(ex.actions, r)
		}
		rc := ex.auth.Authorize(policyCall(r))
		if ex.dry != nil && rc == rawsqlite.AuthOK {
			ex.dry.authorized(r)
		}
		return rc
	}); err != nil {
		return err
	}
	ex.authorizer = true
	return nil
}

// policyCall passes one authorizer request to the policy, with what the
// binding adds to SQLite's arguments: whether a PRAGMA's value is NULL
// (PRAGMA x) or empty (PRAGMA x = ”), and whether a virtual table prepares
// the statement while the agent's compiles.
func policyCall(r rawsqlite.AuthRequest) policy.Call {
	return policy.Call{Action: r.Action, Arg1: r.Arg1, Arg2: r.Arg2, DB: r.DB, Trigger: r.Trigger, Arg2Null: r.Arg2Null, Nested: r.Nested}
}

// capGrowth sets max_page_count so that one statement can add at most
// --max-growth-mb to the file.
func (ex *executor) capGrowth() error {
	if ex.req.Limits.MaxGrowthMB <= 0 {
		return nil
	}
	pages, err := ex.scalarInt("PRAGMA page_count")
	if err != nil {
		return ex.classify(err)
	}
	size, err := ex.scalarInt("PRAGMA page_size")
	if err != nil || size <= 0 {
		return ex.classify(err)
	}
	limit := pages + int64(ex.req.Limits.MaxGrowthMB)<<20/size
	return ex.conn.Exec(fmt.Sprintf("PRAGMA max_page_count=%d", limit))
}

func (ex *executor) shadowTables() (map[string]bool, error) {
	shadow := map[string]bool{}
	err := ex.each("SELECT name FROM pragma_table_list WHERE schema='main' AND type='shadow'", func(st *rawsqlite.Stmt) error {
		shadow[rawsqlite.FoldName(st.ColumnText(0))] = true
		return nil
	})
	return shadow, err
}

func (ex *executor) violation() error {
	if ex.auth == nil {
		return nil
	}
	if v := ex.auth.Violation(); v != nil {
		return v
	}
	return nil
}

// compile prepares the agent's statement under the policy and makes sure it
// is the only one: anything but white space and comments after it is
// refused before anything runs. A nil statement means empty input.
func (ex *executor) compile(sql string) (*rawsqlite.Stmt, string, error) {
	if strings.Contains(sql, "--") && !rawsqlite.Complete(sql+";") && rawsqlite.Complete(sql+"\n;") {
		// The statement stops inside a -- comment. SQLite stores such a
		// comment as the end of an index; a line break after it lets
		// get_schema print a ';' the replay sees, and changes nothing else.
		sql += "\n"
	}
	ex.auth.Reset()
	ex.actions = nil
	ex.agentPhase, ex.compiling = true, true
	if ex.dry != nil {
		ex.dry.compiling = true
	}
	st, tail, err := ex.conn.Prepare(sql)
	ex.agentPhase, ex.compiling = false, false
	if ex.dry != nil {
		ex.dry.compiling = false
	}
	if err != nil {
		return nil, "", ex.classify(err)
	}
	if v := ex.violation(); v != nil {
		// The authorizer may have answered IGNORE-free denials that SQLite
		// still compiled around; never run such a statement.
		if st != nil {
			st.Finalize()
		}
		return nil, "", v
	}
	if st == nil {
		return nil, "", errcode.New(errcode.InvalidArgument, "the query is empty; pass one SQL statement")
	}
	if more, err := ex.hasMoreStatements(tail); err != nil || more {
		st.Finalize()
		if err != nil {
			return nil, "", err
		}
		return nil, "", errcode.New(errcode.MultipleStatements, "only one statement per call is allowed; send the statements as separate calls (nothing was run)")
	}
	text := strings.TrimSpace(sql[:len(sql)-len(tail)])
	return st, text, nil
}

// hasMoreStatements asks SQLite whether tail holds anything but white space,
// comments and semicolons: preparing it yields no statement exactly then.
// The tail is compiled with the policy silent and is never run.
func (ex *executor) hasMoreStatements(tail string) (bool, error) {
	for strings.TrimSpace(tail) != "" {
		st, rest, err := ex.conn.Prepare(tail)
		if err != nil {
			return true, nil
		}
		if st != nil {
			st.Finalize()
			return true, nil
		}
		if len(rest) >= len(tail) {
			return false, errors.New("prepare made no progress")
		}
		tail = rest
	}
	return false, nil
}

// stepAgent steps the agent's statement with the policy in force (SQLite may
// re-prepare it, or a virtual table may prepare its own, while stepping).
func (ex *executor) stepAgent(st *rawsqlite.Stmt) (bool, error) {
	if ex.timedOut.Load() {
		return false, &rawsqlite.Error{Code: rawsqlite.ResultInterrupt, Msg: "interrupted"}
	}
	ex.agentPhase = true
	row, err := st.Step()
	ex.agentPhase = false
	return row, err
}

// exec runs one of the worker's own statements.
func (ex *executor) exec(sql string) error { return ex.conn.Exec(sql) }

func (ex *executor) scalarInt(sql string) (int64, error) {
	var v int64
	err := ex.each(sql, func(st *rawsqlite.Stmt) error {
		v = st.ColumnInt64(0)
		return nil
	})
	return v, err
}

// each runs one of the worker's own queries, with args bound as text, and
// calls fn for every row.
func (ex *executor) each(sql string, fn func(*rawsqlite.Stmt) error, args ...string) error {
	st, _, err := ex.conn.Prepare(sql)
	if err != nil {
		return err
	}
	if st == nil {
		return errors.New("empty internal statement")
	}
	defer st.Finalize()
	for i, a := range args {
		if err := st.BindText(i+1, a); err != nil {
			return err
		}
	}
	for {
		row, err := st.Step()
		if err != nil {
			return err
		}
		if !row {
			return nil
		}
		if err := fn(st); err != nil {
			return err
		}
	}
}
