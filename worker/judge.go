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
	j.Schema = sum.Schema
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
// refuses: a trigger it creates (whose body the worker checks only by
// compiling statements that fire it once it exists, after it ran), and
// every call whose value can differ between nodes.
func (ex *executor) refuseInCluster(st *rawsqlite.Stmt) error {
	for _, a := range ex.actions {
		if a.Action == policy.ActionCreateTrigger {
			return errcode.New(errcode.Policy, "CREATE TRIGGER is not allowed in a cluster: the server checks a trigger's body against the policy only once the trigger exists, and in a cluster it cannot create it before that check; write the trigger's effect as separate statements")
		}
	}
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
	} else if col, table, ok := ex.defaultCalling(d.Function); ok {
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
