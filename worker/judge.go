package worker

import (
	"fmt"
	"sort"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// judge answers a Judge request (SPEC 13): the agent's statement is
// compiled under the mode's policy and held to every check that comes
// before a write, and never stepped. The connection is query_only (setup)
// and, in a cluster, opened on the node's file read-only while rqlited
// writes it.
func (ex *executor) judge() (*ipc.Response, error) {
	// One read transaction, so that the schema version and the compiled
	// statement come from the same state of the file. Reading a table
	// first makes SQLite check its cached schema against that state (and
	// load it again when another process changed it).
	if err := ex.exec("BEGIN"); err != nil {
		return nil, ex.classify(err)
	}
	defer func() {
		if !ex.conn.Autocommit() {
			_ = ex.exec("ROLLBACK")
		}
	}()
	if _, err := ex.scalarInt("SELECT count(*) FROM sqlite_schema"); err != nil {
		return nil, ex.classify(err)
	}
	version, err := ex.scalarInt("PRAGMA schema_version")
	if err != nil {
		return nil, ex.classify(err)
	}
	st, sum, reads, err := ex.prepareAgent()
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	j := &ipc.Judgement{SQL: judgedText(st.SQL()), Reads: reads, SchemaVersion: version}
	if reads {
		// What read would refuse before it runs anything.
		if err := ex.refuseWriteInRead(st); err != nil {
			return nil, err
		}
		if ex.req.Cluster && st.IsExplain() == 0 {
			// prepareAgent does not look for VACUUM in a statement it
			// answers as a read; VACUUM INTO would write a file on the node.
			if err := ex.refuseVacuum(st); err != nil {
				return nil, err
			}
		}
		return &ipc.Response{Text: "judged: reads", Judgement: j}, nil
	}
	j.Schema, j.Inserts, j.Returning = sum.Schema, sum.Inserts, st.ColumnCount() > 0
	j.UpdateGuard = ex.mode == policy.Write && sum.PureUpdate()
	// A trigger's body is held to the policy once it exists (write does so
	// after it ran): here in a copy of the schema.
	for _, a := range ex.actions {
		if a.Action == policy.ActionCreateTrigger {
			if err := ex.judgeTrigger(st.SQL(), a.Arg1); err != nil {
				return nil, err
			}
		}
	}
	if ex.req.Cluster {
		if err := ex.refuseInCluster(st); err != nil {
			return nil, err
		}
	}
	if ex.mode == policy.Destructive {
		j.Tables = ex.touchedTables()
	}
	return &ipc.Response{Text: "judged: writes", Judgement: j}, nil
}

// refuseInCluster holds a writing statement to what a cluster also
// refuses: every call whose value can differ between nodes.
func (ex *executor) refuseInCluster(st *rawsqlite.Stmt) error {
	ops, err := ex.program(st)
	if err != nil {
		return ex.uncheckable(err)
	}
	d := policy.DivergentCall(ops)
	if d == nil {
		return nil
	}
	call := d.Function + "()"
	if strings.HasPrefix(d.Function, "current_") {
		call = strings.ToUpper(d.Function)
	}
	where := ""
	if d.Trigger != "" {
		where = " (in trigger " + d.Trigger + ", which this statement fires)"
	} else if col, table, ok := ex.defaultCalling(d.Function); ok && !strings.Contains(strings.ToLower(st.SQL()), d.Function) {
		// Only words: a call the statement's text does not name came
		// from a column's DEFAULT.
		where = fmt.Sprintf(" (column %s of %s has it as its DEFAULT, and this INSERT leaves the column out: give %s a value in the INSERT)", col, table, col)
	}
	fix := "compute the value in your call and write it as a literal"
	if d.Clock {
		fix = "compute the time in your call and write it as a literal, e.g. '2026-12-04 10:00:00'"
	}
	return errcode.New(errcode.Policy, fmt.Sprintf(
		"%s is not allowed in a write in cluster mode%s: %s, so the nodes' copies would differ; %s (reads may use it)",
		call, where, d.Why, fix))
}

// defaultCalling finds a column of a table the statement inserts into
// whose DEFAULT calls function, for the refusal's words only: the
// refusal itself comes from the compiled program.
func (ex *executor) defaultCalling(function string) (column, table string, ok bool) {
	for _, t := range ex.auth.InsertTargets() {
		err := ex.each("SELECT name, dflt_value FROM pragma_table_xinfo(?1)", func(s *rawsqlite.Stmt) error {
			if !ok && strings.Contains(strings.ToLower(s.ColumnText(1)), function) {
				column, table, ok = s.ColumnText(0), t, true
			}
			return nil
		}, t)
		if err == nil && ok {
			return column, table, true
		}
	}
	return "", "", false
}

// touchedTables are the tables a destructive statement's compile asked to
// change (its triggers' bodies included), sorted: what its snapshot keeps.
func (ex *executor) touchedTables() []string {
	seen := map[string]string{}
	for _, a := range ex.actions {
		name := ""
		switch a.Action {
		case policy.ActionInsert, policy.ActionUpdate, policy.ActionDelete, policy.ActionDropTable:
			name = a.Arg1
		case policy.ActionAlterTable:
			name = a.Arg2
		}
		if name == "" || (a.DB != "" && a.DB != "main") || strings.HasPrefix(rawsqlite.FoldName(name), "sqlite_") {
			continue
		}
		seen[rawsqlite.FoldName(name)] = name
	}
	out := make([]string, 0, len(seen))
	for _, n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// judgedText is the statement as SQLite compiled it (sqlite3_sql: from
// the request's start through the statement's ';'), without the white
// space around it. A statement that ends in a -- comment keeps a line
// break after it, as compile gave it, so that whatever follows it in the
// cluster's request is not commented out.
func judgedText(sql string) string {
	t := strings.TrimSpace(sql)
	if strings.Contains(t, "--") && !rawsqlite.Complete(t+";") && rawsqlite.Complete(t+"\n;") {
		t += "\n"
	}
	return t
}

// judgeTrigger holds the body of the trigger name that create (a CREATE
// TRIGGER) makes to the policy, as write does after it ran
// (checkNewTriggers): SQLite compiles a trigger's body only into the
// statements that fire it, so they are compiled once the trigger exists.
// The node's file is read-only, so the trigger is made in an in-memory
// copy of its schema (the CREATE statements, no rows). In a cluster, a
// body that calls what can differ between nodes is refused too: every
// write that fires it would be.
func (ex *executor) judgeTrigger(create, name string) error {
	uncheckable := func(err error) error {
		return errcode.New(errcode.Policy, "CREATE TRIGGER could not be checked before it runs in the cluster ("+err.Error()+"); nothing was run")
	}
	mem, err := rawsqlite.Open(":memory:", rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		return uncheckable(err)
	}
	defer mem.Close()
	if _, err := mem.DBConfig(rawsqlite.ConfigDefensive, true); err != nil {
		return uncheckable(err)
	}
	if _, err := mem.DBConfig(rawsqlite.ConfigTrustedSchema, false); err != nil {
		return uncheckable(err)
	}
	if err := declareInnocuousFTSFunctions(mem); err != nil {
		return uncheckable(err)
	}
	// Shadow tables come with their virtual table; sqlite_* tables with
	// what uses them. Objects in the order they were made.
	shadow, err := ex.shadowTables()
	if err != nil {
		return uncheckable(err)
	}
	var schema []string
	err = ex.each("SELECT name, sql FROM sqlite_schema WHERE sql IS NOT NULL AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY rowid", func(s *rawsqlite.Stmt) error {
		if !shadow[rawsqlite.FoldName(s.ColumnText(0))] {
			schema = append(schema, s.ColumnText(1))
		}
		return nil
	})
	if err != nil {
		return uncheckable(err)
	}
	for _, sql := range append(schema, create) {
		if err := mem.Exec(sql); err != nil {
			return uncheckable(err)
		}
	}
	copyEx := &executor{req: ex.req, log: ex.log, conn: mem, mode: ex.mode}
	if err := copyEx.setup(); err != nil {
		return uncheckable(err)
	}
	before := map[string]bool{}
	err = copyEx.each("SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name <> ?1", func(s *rawsqlite.Stmt) error {
		before[s.ColumnText(0)] = true
		return nil
	}, name)
	if err != nil {
		return uncheckable(err)
	}
	if err := copyEx.checkNewTriggers(before); err != nil {
		return err
	}
	if !ex.req.Cluster {
		return nil
	}
	return copyEx.divergentTrigger(name)
}

// divergentTrigger refuses the trigger name when a statement that fires it
// runs a call in its body whose value can differ between nodes.
func (ex *executor) divergentTrigger(name string) error {
	table := ""
	err := ex.each("SELECT tbl_name FROM sqlite_schema WHERE type = 'trigger' AND name = ?1", func(s *rawsqlite.Stmt) error {
		table = s.ColumnText(0)
		return nil
	}, name)
	if err != nil || table == "" {
		return ex.uncheckable(fmt.Errorf("trigger %s not found in the copy: %v", name, err))
	}
	cols, err := ex.columns(table)
	if err != nil {
		return ex.uncheckable(err)
	}
	sets := make([]string, len(cols))
	for i, c := range cols {
		sets[i] = rawsqlite.QuoteIdent(c.name) + " = " + rawsqlite.QuoteIdent(c.name)
	}
	quoted := rawsqlite.QuoteIdent(table)
	probes := []string{"INSERT INTO " + quoted + " DEFAULT VALUES", "DELETE FROM " + quoted}
	if len(sets) > 0 {
		probes = append(probes, "UPDATE "+quoted+" SET "+strings.Join(sets, ", "))
	}
	for _, probe := range probes {
		var ops []policy.Op
		err := ex.each("EXPLAIN "+probe, func(p *rawsqlite.Stmt) error {
			ops = append(ops, policy.Op{Addr: p.ColumnInt64(0), Opcode: p.ColumnText(1),
				P1: p.ColumnInt64(2), P2: p.ColumnInt64(3), P3: p.ColumnInt64(4), P4: p.ColumnText(5)})
			return nil
		})
		if err != nil {
			continue // a view's INSTEAD OF trigger fires on some probes only
		}
		if d := policy.DivergentCall(ops); d != nil && rawsqlite.FoldName(d.Trigger) == rawsqlite.FoldName(name) {
			return errcode.New(errcode.Policy, fmt.Sprintf(
				"CREATE TRIGGER %s is not allowed in cluster mode: its body calls %s(), and %s, so the nodes' copies would differ (and every write that fires it would be refused); write the value into the row in the statement that fires it, as a literal",
				name, d.Function, d.Why))
		}
	}
	return nil
}
