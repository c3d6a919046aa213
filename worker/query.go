package worker

import (
	"fmt"
	"os"
	"strings"
	"unsafe"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// query runs the agent's one statement under the request's mode, or its
// dry run when the request asks for a preview.
func (ex *executor) query() (*ipc.Response, error) {
	if ex.req.Preview != nil {
		return ex.previewQuery()
	}
	st, sum, reads, err := ex.prepareAgent()
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	if reads {
		return ex.read(st, sum)
	}
	return ex.write(st, sum)
}

// prepareAgent compiles the agent's statement and holds a writing one to
// the checks that come before it runs. reads reports a statement answered
// as a read. The caller finalizes st.
func (ex *executor) prepareAgent() (st *rawsqlite.Stmt, sum policy.Summary, reads bool, err error) {
	st, text, err := ex.compile(ex.req.SQL)
	if err != nil {
		return nil, sum, false, err
	}
	ipc.StampWorker(ipc.StepCompiled)
	// What the statement does is read right after it compiles: FTS5 and
	// R*Tree add their own upkeep actions once it runs.
	sum = ex.auth.Summary()
	if ex.mode <= policy.Read || st.IsExplain() != 0 {
		// EXPLAIN lists the program of a statement the policy allowed and
		// runs none of it.
		return st, sum, true, nil
	}
	if st.Readonly() && st.ColumnCount() > 0 && !sum.Writes() {
		// A plain SELECT sent to a writing tool: answer it like read_query
		// rather than refuse; it changes nothing.
		return st, sum, true, nil
	}
	err = ex.refuseVacuum(st)
	if err == nil && sum.Schema && endsInOpenComment(text) {
		err = errcode.New(errcode.InvalidArgument, "the statement ends inside a /* comment that is never closed, which SQLite would keep as the end of the stored definition (get_schema could not end it with ';'); close it with */ or remove it")
	}
	if err == nil {
		err = ex.checkFTSCommands(st)
	}
	if err != nil {
		st.Finalize()
		return nil, sum, false, err
	}
	return st, sum, false, nil
}

// read renders a read-only statement. SQLite's own verdict backs the policy:
// a statement it does not call read-only is refused here too; an EXPLAIN
// runs nothing of the statement it lists.
func (ex *executor) read(st *rawsqlite.Stmt, sum policy.Summary) (*ipc.Response, error) {
	if err := ex.refuseWriteInRead(st); err != nil {
		return nil, err
	}
	caps := ex.caps()
	out := newResult(ex.req.Format, caps, columnNames(st))
	row := make([]render.Value, st.ColumnCount())
	// Rows before the offset are stepped over. A statement that has run
	// out must not be stepped again: SQLite would start it over.
	done := false
	for skipped := 0; skipped < caps.Offset && !done; skipped++ {
		ok, err := ex.stepAgent(st)
		if err != nil {
			return nil, err
		}
		done = !ok
	}
	var n int64
	more := false
	for !done {
		ok, err := ex.stepAgent(st)
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		if int(n) == caps.Limit {
			more = true
			break
		}
		readRowView(st, row)
		if !out.Add(row) {
			break
		}
		n++
	}
	resp := out.finish(more)
	ipc.StampWorker(ipc.StepStepped)
	return resp, nil
}

// refuseWriteInRead refuses a statement answered as a read that SQLite
// does not call read-only, and EXPLAIN in the readonly profile.
func (ex *executor) refuseWriteInRead(st *rawsqlite.Stmt) error {
	explain := st.IsExplain() != 0
	readOnly := explain || st.Readonly()
	if !readOnly {
		// PRAGMA journal_mode (no value) only asks for the mode, yet SQLite
		// calls every program with a JournalMode instruction writing.
		writes, err := ex.programWrites(st)
		if err != nil {
			return ex.uncheckable(err)
		}
		readOnly = !writes
	}
	if !readOnly || (ex.mode == policy.Select && explain) {
		if ex.mode == policy.Select {
			what := "only SELECT or WITH ... SELECT statements are allowed; this server is read-only"
			if explain {
				what = "EXPLAIN is not allowed in query_database: " + what
			}
			return errcode.New(errcode.ReadOnly, what)
		}
		return errcode.New(errcode.ReadOnly, fmt.Sprintf("this statement writes, which %s does not allow; use write_query", ex.mode.Tool()))
	}
	return nil
}

// write runs a writing statement in its own transaction, with the UPDATE
// rowcount guard in write mode. A destructive statement is preceded by
// its snapshot (a full copy, or an undo record made while it runs).
func (ex *executor) write(st *rawsqlite.Stmt, sum policy.Summary) (*ipc.Response, error) {
	committed := false
	defer func() {
		if !committed && !ex.conn.Autocommit() {
			_ = ex.exec("ROLLBACK")
		}
	}()
	var snap *taken
	if ex.mode == policy.Destructive {
		var err error
		if snap, err = ex.beforeDestructive(); err != nil {
			return nil, err
		}
	}
	// A snapshot leaves the write transaction begun: the statement starts
	// from exactly the state it copied.
	if ex.conn.Autocommit() {
		if err := ex.exec("BEGIN IMMEDIATE"); err != nil {
			return nil, err
		}
	}
	rc := ex.startRecount()
	returning, changes, err := ex.apply(st, sum)
	if snap != nil && snap.rec != nil {
		snap, returning, changes, err = ex.settleUndo(st, sum, snap, returning, changes, err)
	}
	if err != nil {
		return nil, err
	}
	recounted := rc.finish(ex)
	if err := ex.exec("COMMIT"); err != nil {
		if snap != nil && snap.kind == ipc.SnapshotUndo {
			// The record of a change that did not happen would only
			// confuse: restoring it would find nothing to do.
			_ = os.Remove(snap.path)
		}
		return nil, err
	}
	committed = true
	var detail *ipc.Detail
	if ex.mode == policy.Destructive {
		detail = snap.detail()
	}
	resp := ex.written(sum, changes, returning, snap, detail)
	resp.Recounted = recounted
	return resp, nil
}

// outOfMemory reports SQLite's out-of-memory error (the heap limit).
func outOfMemory(err error) bool {
	return rawsqlite.ErrorCode(err)&0xff == rawsqlite.ResultNoMem
}

// apply steps a writing statement to its end inside the open transaction
// and holds it to the checks that follow a run: the rowcount guard in
// write mode, and the policy over the bodies of triggers it created. It
// returns the RETURNING rows (nil without RETURNING) and sqlite3_changes.
func (ex *executor) apply(st *rawsqlite.Stmt, sum policy.Summary) (*result, int64, error) {
	var triggersBefore map[string]bool
	if ex.mode == policy.Destructive {
		var err error
		if triggersBefore, err = ex.triggers(); err != nil {
			return nil, 0, err
		}
	}
	// RETURNING rows: SQLite makes every change on the first step, so the
	// statement is stepped to its end even past the caps. The renderer
	// refuses rows past the row or byte cap and notes that more existed.
	var returning *result
	var row []render.Value
	if n := st.ColumnCount(); n > 0 {
		caps := ex.caps()
		caps.Limit, caps.Offset = caps.MaxRows, 0
		returning = newResult("csv", caps, columnNames(st))
		row = make([]render.Value, n)
	}
	full := returning == nil
	for {
		ok, err := ex.stepAgent(st)
		if err != nil {
			return nil, 0, err
		}
		if !ok {
			break
		}
		if !full {
			readRow(st, row)
			full = !returning.Add(row)
		}
	}
	changes := ex.conn.Changes()
	if ex.mode == policy.Write && sum.PureUpdate() && ex.req.Caps.MaxUpdateRows > 0 && changes > int64(ex.req.Caps.MaxUpdateRows) {
		return nil, 0, errcode.New(errcode.Policy, fmt.Sprintf(
			"this UPDATE would change %d rows, more than --max-update-rows=%d; it was rolled back and nothing changed. Narrow the WHERE clause, update in batches, or use destructive_query for a deliberate bulk update (it snapshots first)",
			changes, ex.req.Caps.MaxUpdateRows))
	}
	if triggersBefore != nil {
		if err := ex.checkNewTriggers(triggersBefore); err != nil {
			return nil, 0, err
		}
	}
	return returning, changes, nil
}

// written is the answer to a committed write (SPEC 5.2); snap is the
// snapshot a destructive statement took (nil or without a path: none),
// and detail what the audit row says of it (snap.detail()), which the
// answer only adds to.
func (ex *executor) written(sum policy.Summary, changes int64, returning *result, snap *taken, detail *ipc.Detail) *ipc.Response {
	var b strings.Builder
	if sum.Schema {
		b.WriteString("ok: schema statement executed")
		changes = 0
	} else {
		fmt.Fprintf(&b, "ok: %d rows affected", changes)
		if sum.Inserts {
			fmt.Fprintf(&b, " (last_insert_rowid=%d)", ex.conn.LastInsertRowID())
		}
	}
	if ex.mode == policy.Destructive {
		if snap != nil && snap.path != "" {
			b.WriteString("; snapshot: " + snap.path + foreignNote(ex.foreign))
			detail.Snapshot.Foreign = ex.foreign
		} else {
			b.WriteString("; snapshots are disabled")
		}
	}
	if returning != nil {
		b.WriteByte('\n')
		b.WriteString(returning.finish(false).Text)
	}
	return &ipc.Response{Text: b.String(), Rows: changes, Detail: detail}
}

// program lists the compiled program of st, trigger programs included, as
// EXPLAIN shows it. The text is compiled again with the policy silent and
// never run; on the same connection and schema it compiles to the same
// program.
func (ex *executor) program(st *rawsqlite.Stmt) ([]policy.Op, error) {
	var ops []policy.Op
	err := ex.each("EXPLAIN "+st.SQL(), func(p *rawsqlite.Stmt) error {
		ops = append(ops, policy.Op{Addr: p.ColumnInt64(0), Opcode: p.ColumnText(1),
			P1: p.ColumnInt64(2), P2: p.ColumnInt64(3), P3: p.ColumnInt64(4), P4: p.ColumnText(5)})
		return nil
	})
	return ops, err
}

// programWrites reports whether st's program has an instruction for which
// SQLite calls a statement writing (sqlite3_stmt_readonly false): a write
// transaction, a checkpoint, VACUUM, or a journal-mode change. A
// JournalMode instruction whose P3 is -1 only queries the mode.
func (ex *executor) programWrites(st *rawsqlite.Stmt) (bool, error) {
	ops, err := ex.program(st)
	for _, op := range ops {
		switch {
		case op.Opcode == "Transaction" && op.P2 != 0, op.Opcode == "Checkpoint", op.Opcode == "Vacuum",
			op.Opcode == "JournalMode" && op.P3 != -1:
			return true, err
		}
	}
	return false, err
}

// refuseVacuum covers what the authorizer never sees: VACUUM (and VACUUM
// INTO, which writes another file) compile without an authorizer callback,
// so the compiled program itself is inspected for its Vacuum opcode.
func (ex *executor) refuseVacuum(st *rawsqlite.Stmt) error {
	ops, err := ex.program(st)
	found := false
	for _, op := range ops {
		found = found || op.Opcode == "Vacuum"
	}
	if err != nil {
		// EXPLAIN of a statement that compiled cannot fail but for limits;
		// refuse rather than run something unchecked.
		return errcode.New(errcode.Policy, "the statement could not be checked: "+err.Error())
	}
	if found {
		return errcode.New(errcode.Policy, "VACUUM is not allowed in any tool (VACUUM INTO would write another file)")
	}
	return nil
}

func (ex *executor) caps() render.Caps {
	c := ex.req.Caps
	limit := ex.req.Limit
	if limit <= 0 {
		limit = 100
	}
	return render.Caps{Limit: limit, Offset: ex.req.Offset, MaxRows: c.MaxRows, MaxBytes: c.MaxResultBytes, MaxCellChars: c.MaxCellChars}
}

func columnNames(st *rawsqlite.Stmt) []string {
	names := make([]string, st.ColumnCount())
	for i := range names {
		names[i] = st.ColumnName(i)
	}
	return names
}

// readRow reads the current row with each value's own storage class, so a
// REAL reads as REAL and a TEXT date stays text.
func readRow(st *rawsqlite.Stmt, row []render.Value) { readValues(st, row, false) }

// readRowView is readRow for a row that is rendered before the statement
// steps again: TEXT values alias SQLite's row memory instead of being
// copied into Go strings, one allocation per cell saved. The strings it
// puts in row are valid only until the next Step, Reset or Finalize.
func readRowView(st *rawsqlite.Stmt, row []render.Value) { readValues(st, row, true) }

func readValues(st *rawsqlite.Stmt, row []render.Value, aliasText bool) {
	for i := range row {
		switch st.ColumnType(i) {
		case rawsqlite.TypeInteger:
			row[i] = render.Value{Kind: render.Integer, Int: st.ColumnInt64(i)}
		case rawsqlite.TypeFloat:
			row[i] = render.Value{Kind: render.Real, Real: st.ColumnDouble(i)}
		case rawsqlite.TypeText:
			if aliasText {
				b := st.ColumnTextView(i)
				row[i] = render.Value{Kind: render.Text, Text: unsafe.String(unsafe.SliceData(b), len(b))}
			} else {
				row[i] = render.Value{Kind: render.Text, Text: st.ColumnText(i)}
			}
		case rawsqlite.TypeBlob:
			row[i] = render.Value{Kind: render.Blob, BlobLen: st.ColumnBytes(i)}
		default:
			row[i] = render.Value{Kind: render.Null}
		}
	}
}

// triggers lists the names of the triggers in the schema.
func (ex *executor) triggers() (map[string]bool, error) {
	names := map[string]bool{}
	err := ex.each("SELECT name FROM sqlite_schema WHERE type = 'trigger'", func(st *rawsqlite.Stmt) error {
		names[st.ColumnText(0)] = true
		return nil
	})
	return names, err
}

// checkNewTriggers holds a trigger created by this statement to the policy
// now rather than when it first fires: SQLite compiles a trigger's body
// only into the statements that fire it, so statements that would fire it
// are compiled (never run) under the policy. A body that writes a protected
// table, attaches or anything else refused makes the CREATE TRIGGER fail.
func (ex *executor) checkNewTriggers(before map[string]bool) error {
	type trigger struct{ name, table string }
	var created []trigger
	err := ex.each("SELECT name, tbl_name FROM sqlite_schema WHERE type = 'trigger'", func(st *rawsqlite.Stmt) error {
		if name := st.ColumnText(0); !before[name] {
			created = append(created, trigger{name, st.ColumnText(1)})
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, tr := range created {
		cols, err := ex.columns(tr.table)
		if err != nil {
			return err
		}
		// Every column is set, so that UPDATE OF triggers are compiled too.
		sets := make([]string, len(cols))
		for i, c := range cols {
			sets[i] = rawsqlite.QuoteIdent(c.name) + " = " + rawsqlite.QuoteIdent(c.name)
		}
		table := rawsqlite.QuoteIdent(tr.table)
		probes := []string{"INSERT INTO " + table + " DEFAULT VALUES", "DELETE FROM " + table}
		if len(sets) > 0 {
			probes = append(probes, "UPDATE "+table+" SET "+strings.Join(sets, ", "))
		}
		for _, probe := range probes {
			ex.auth.Reset()
			ex.agentPhase = true
			st, _, _ := ex.conn.Prepare(probe)
			ex.agentPhase = false
			if st != nil {
				st.Finalize()
			}
			if err := ex.violation(); err != nil {
				return err
			}
		}
	}
	return nil
}
