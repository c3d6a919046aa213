package worker

import (
	"io"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// preopened is the connection opened ahead, if any, held by the executor
// that will run the request.
var preopened struct {
	path     string
	readOnly bool
	ex       *executor
}

// preopen opens the database the front named (ipc.EnvPreopen). Nothing
// of the agent's runs here; failures only cost the head start, and the
// request's own open reports them.
func preopen(path string, readOnly bool, log hclog.Logger) {
	if path == "" {
		return
	}
	c, err := openConn(path, readOnly)
	if err != nil {
		log.Debug("no connection opened ahead", "error", err)
		return
	}
	// Reading the schema now spares the request's first prepare that work.
	if err := c.Exec("SELECT count(*) FROM sqlite_schema"); err != nil {
		log.Debug("no connection opened ahead", "error", err)
		c.Close()
		return
	}
	preopened.path, preopened.readOnly, preopened.ex = path, readOnly, &executor{conn: c}
}

// takePreopened hands over the executor of the connection opened ahead
// when it is the one req needs, and closes it otherwise.
func takePreopened(req *ipc.Request) *executor {
	ex := preopened.ex
	if ex == nil {
		return nil
	}
	preopened.ex = nil
	if preopened.readOnly == req.ReadOnlyFile && sandbox.SamePath(preopened.path, req.DB) {
		ex.detail, ex.copiedAgain, ex.clock, ex.progress = nil, false, nil, nil
		return ex
	}
	ex.conn.Close()
	return nil
}

// dropPreopened closes the connection opened ahead, if any.
func dropPreopened() {
	if preopened.ex != nil {
		preopened.ex.conn.Close()
		preopened.ex = nil
	}
}

// warmQuery is the statement a standby runs through the request's whole
// path (policy, compile, step, render) before its request comes: it reads
// one row of the schema, which every database has.
const warmQuery = "SELECT type, name, tbl_name, rootpage, sql FROM sqlite_schema WHERE rowid = 1"

// readyAhead readies the connection opened ahead for the mode most calls
// use (read; select on a read-only file), as setup does for a request:
// lock waits, query_only, the authorizer. A request in that mode then
// only gets its own fresh policy; one in another mode has setup change
// what differs. It then runs warmQuery under that policy and renders it,
// so that the request's own statement finds SQLite's and the renderer's
// code and memory already touched: after the idle wait of a standby each
// first touch is a page fault. Nothing here depends on a request, and no
// agent SQL runs.
func readyAhead(log hclog.Logger) {
	ex := preopened.ex
	if ex == nil {
		return
	}
	mode := policy.Read
	if preopened.readOnly {
		mode = policy.Select
	}
	ex.req = &ipc.Request{Op: ipc.OpQuery, Mode: ipc.Mode(mode.String()), DB: preopened.path, SQL: warmQuery,
		Caps: ipc.Caps{MaxRows: 1, MaxResultBytes: 32 << 10, MaxCellChars: 100}}
	ex.log, ex.mode = log, mode
	if err := ex.setup(); err != nil {
		log.Debug("connection not readied ahead", "error", err)
		ex.conn.Close()
		preopened.ex = nil
		return
	}
	if _, err := ex.query(); err != nil {
		log.Debug("warm-up statement failed", "error", err)
	}
	ex.auth.Reset()
}

// rewarm readies this standby again when the front says a request is on
// its way (ipc.PrewakeByte), while the front is still parsing the call:
// it settles the address-space limit (the wait is over, so what the
// runtime mapped meanwhile is known), then runs warmQuery again, so that
// after the idle wait SQLite's, the policy's and the renderer's code and
// memory are touched again and SQLite's cache is revalidated (another
// connection's write, such as the front's audit row, empties it). Nothing
// of the agent's runs, and nothing starts once the request has arrived:
// the request must not wait.
func rewarm(log hclog.Logger, arrived func() bool) {
	if arrived() {
		return
	}
	settleAhead(log)
	ex := preopened.ex
	if ex == nil || ex.req == nil || ex.req.SQL != warmQuery || arrived() {
		return
	}
	// The statement alone, not the whole request path: measured, the
	// path's policy and rendering took as long again and outlasted the
	// front's parsing of the call, so the request waited for it.
	st, _, err := ex.conn.Prepare(warmQuery)
	if err != nil {
		log.Debug("warm-up statement failed", "error", err)
		return
	}
	_, _ = st.Step()
	st.Finalize()
}

// prepare does before the request what no request changes: the process
// and memory limits the front configured, the connection opened ahead, and
// (for a standby, which has the time) the connection readied for a read
// with a statement run through it, and a warm JSON codec. The memory limit
// comes last, so that its baseline includes the open connection. An error
// is the limits' and fails the request that follows.
func prepare(env ipc.WorkerEnv, memoryErr error, log hclog.Logger) error {
	preopen(env.Preopen, env.PreopenReadOnly, log)
	if env.Warm {
		readyAhead(log)
		warmCodec()
	}
	return applyStandbyLimits(env, memoryErr, log)
}

// warmFrame is a request that exercises every type of the request frame,
// so that encoding/json has built its decoders before the real one comes.
var warmFrame = `{"v":` + strconv.Itoa(ipc.Version) + `,"op":"query","db":"-","mode":"read","sql":"SELECT 1","format":"csv","limit":1,"offset":0,` +
	`"caps":{"max_rows":1,"max_result_bytes":1,"max_cell_chars":1,"max_update_rows":1,"search_candidates":1},` +
	`"limits":{"timeout_ms":1,"memory_mb":1,"max_growth_mb":1,"sandbox":false},` +
	`"snapshot":{"dir":"-","stem":"-","keep":1},"view":{"name":"v","select":"SELECT 1","description":"d","replace":true},` +
	`"table":{"name":"t","row_counts":true,"include_system":true,"json":true},` +
	`"search":{"pattern":"p","table":"t","columns":["c"],"where":"1","key_column":"k","ignore_case":true,"fixed_strings":true,"context_chars":1,"limit":1,"candidate_cap":1}}`

// warmCodec decodes a dummy request and encodes a dummy response: the
// first use of a type costs encoding/json most (0.8 ms measured on a
// request), and a standby has the time to pay it while it waits.
func warmCodec() {
	_, _ = ipc.ReadRequest(strings.NewReader(warmFrame))
	_ = ipc.WriteResponse(io.Discard, &ipc.Response{Version: ipc.Version, OK: true, Text: "x", Rows: 1, Detail: &ipc.Detail{SQL: "v", Snapshot: &ipc.SnapshotDetail{Kind: ipc.SnapshotFull, Bytes: 1}}})
}
