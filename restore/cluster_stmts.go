package restore

import (
	"context"
	"fmt"
	"math"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// DefaultClusterMaxRequest bounds the row data of a restore through the
// cluster: rqlite holds one request whole, in memory and in its Raft log
// on every node.
const DefaultClusterMaxRequest = 64 << 20

// clusterGuardKey is the restore's row in memory_cluster_guard (1 to 3
// are memory's guards, 4 the checkpoint's head guard).
const clusterGuardKey = 5

// restoreGuardSQL fails the restore's request (the guard table's CHECK)
// unless the chain's head and the newest audit row are those of the
// state the plan was made from: every write through a front carries an
// audit row in its own request, so any write since moves max(id).
var restoreGuardSQL = fmt.Sprintf(`INSERT OR REPLACE INTO %s (k, ok) VALUES (%d, coalesce((SELECT hash FROM %s ORDER BY id DESC LIMIT 1), '%s') = ? AND coalesce((SELECT max(id) FROM %s), 0) = ?)`,
	memory.TableClusterGuard, clusterGuardKey, memory.TableEvents, memory.GenesisHash, memory.TableQueryLog)

// rowBatch bounds the rows (and argRows the arguments) of one INSERT of
// the request: fewer statements, well under SQLite's 32766 variables.
const (
	rowBatch = 200
	argBatch = 2000
)

// clusterPlan is a restore through the cluster, made from a copy of the
// cluster's state (main) with the snapshot attached (snap).
type clusterPlan struct {
	Plan *Plan
	// Head and LastAudit are what the guard checks the cluster still
	// has: the chain's head and the newest audit row's id.
	Head      memory.Head
	LastAudit int64
	// Agent are the statements that put the snapshot's agent objects in
	// place of the current ones.
	Agent []memory.Stmt
	// Bytes is the row data Agent carries, as the request sends it.
	Bytes int64
}

// TooLargeError refuses a restore whose rows do not fit one request.
type TooLargeError struct{ Bytes, Max int64 }

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("the snapshot's agent tables hold more than %d MiB of row data (at least %d MiB as sent; a BLOB byte takes up to 4), more than one rqlite request may carry (--max-request-mb %d); nothing was changed. Restore a copy of the snapshot with the tables or rows you do not need deleted, or raise --max-request-mb if every node has the memory for it",
		e.Max>>20, (e.Bytes+(1<<20)-1)>>20, e.Max>>20)
}

// planCluster reads both catalogs over q (a read transaction on the copy
// of the cluster's state with the snapshot attached as snap), checks the
// untrusted snapshot and makes the request's agent statements.
func planCluster(ctx context.Context, q querier, maxBytes int64) (*clusterPlan, error) {
	cur, err := readCatalog(ctx, q, "main")
	if err != nil {
		return nil, err
	}
	if !cur.has(memory.TableEvents) || !cur.has(memory.TableQueryLog) {
		return nil, fmt.Errorf("the cluster holds no memory tables (%s, %s): no front has served it yet; start one against it first, or name the right cluster", memory.TableEvents, memory.TableQueryLog)
	}
	snap, err := readCatalog(ctx, q, snapSchema)
	if err != nil {
		return nil, snapshotFault(err)
	}
	if err := snapshot.CheckSnapshot(snapObjects(snap)); err != nil {
		return nil, err
	}
	cp := &clusterPlan{}
	if cp.Plan, err = makePlan(ctx, q, cur, snap, false); err != nil {
		return nil, err
	}
	if cp.Head, err = memory.ReadHead(ctx, q); err != nil {
		return nil, err
	}
	if err := q.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM main."+memory.TableQueryLog).Scan(&cp.LastAudit); err != nil {
		return nil, err
	}
	g := &stmtGen{ctx: ctx, q: q, max: maxBytes}
	if err := g.agentObjects(cur, snap); err != nil {
		return nil, err
	}
	cp.Agent, cp.Bytes = g.out, g.bytes
	return cp, nil
}

// stmtGen writes applyAgentObjects as statements with arguments, reading
// the rows from the attached snapshot: what the file form does inside
// one transaction, rqlite runs as one request on every node.
type stmtGen struct {
	ctx   context.Context
	q     querier
	max   int64
	out   []memory.Stmt
	bytes int64
}

func (g *stmtGen) add(sql string, args ...any) {
	g.out = append(g.out, memory.Stmt{SQL: sql, Args: args})
}

// agentObjects follows applyAgentObjects step by step: drop triggers,
// views and tables (a table's indexes and triggers, a virtual table's
// shadow tables go with it), create the snapshot's tables, insert their
// rows (shadow tables' too, emptied first), SQLite's bookkeeping, then
// indexes, views and triggers.
func (g *stmtGen) agentObjects(cur, snap *catalog) error {
	for _, typ := range []string{"trigger", "view", "table"} {
		for _, o := range slices.Backward(cur.agent(typ)) {
			if o.list == "shadow" {
				continue
			}
			g.add("DROP " + strings.ToUpper(typ) + " IF EXISTS main." + rawsqlite.QuoteIdent(o.name))
		}
	}
	tables := snap.agent("table")
	for _, o := range tables {
		if o.list != "shadow" {
			g.add(o.sql)
		}
	}
	for _, o := range tables {
		if o.list == "virtual" {
			continue
		}
		if o.list == "shadow" {
			g.add("DELETE FROM main." + rawsqlite.QuoteIdent(o.name))
		}
		cols, err := storedColumns(g.ctx, g.q, o.name)
		if err != nil {
			return err
		}
		if !o.withoutRowid {
			if alias := rowidAlias(cols); alias != "" {
				cols = append([]string{alias}, cols...)
			}
		}
		if err := g.rows(o.name, cols, ""); err != nil {
			return err
		}
	}
	if err := g.upkeep(cur, snap, tables); err != nil {
		return err
	}
	for _, typ := range []string{"index", "view", "trigger"} {
		for _, o := range snap.agent(typ) {
			if o.sql != "" {
				g.add(o.sql)
			}
		}
	}
	return nil
}

// upkeep is copyUpkeep as statements: the AUTOINCREMENT counters and
// ANALYZE's statistics of the restored tables. main has sqlite_sequence
// after the creates when it had one, or when the snapshot counts for a
// restored table (only an AUTOINCREMENT table is counted); the stat
// tables only when it had them.
func (g *stmtGen) upkeep(cur, snap *catalog, tables []object) error {
	type upkeep struct{ table, key string }
	for _, u := range []upkeep{{"sqlite_sequence", "name"}, {"sqlite_stat1", "tbl"}, {"sqlite_stat4", "tbl"}} {
		if !snap.has(u.table) {
			continue
		}
		names := make([]any, 0, len(tables))
		marks := make([]string, 0, len(tables))
		for _, o := range tables {
			names = append(names, o.name)
			marks = append(marks, "?")
		}
		if len(names) == 0 {
			continue
		}
		where := u.key + " IN (" + strings.Join(marks, ", ") + ")"
		inMain := cur.has(u.table)
		if !inMain && u.table == "sqlite_sequence" {
			var n int64
			if err := g.q.QueryRowContext(g.ctx, "SELECT count(*) FROM "+snapSchema+".sqlite_sequence WHERE "+where, names...).Scan(&n); err != nil {
				return fmt.Errorf("read the snapshot's sqlite_sequence: %w", err)
			}
			inMain = n > 0
		}
		if !inMain {
			continue
		}
		g.add("DELETE FROM main."+u.table+" WHERE "+where, names...)
		cols, err := g.columns(u.table)
		if err != nil {
			return err
		}
		if err := g.rows(u.table, cols, " WHERE "+where, names...); err != nil {
			return err
		}
	}
	return nil
}

// columns are the columns of the snapshot's table (SQLite's own tables).
func (g *stmtGen) columns(table string) ([]string, error) {
	rows, err := g.q.QueryContext(g.ctx, "SELECT name FROM pragma_table_info(?, ?) ORDER BY cid", table, snapSchema)
	if err != nil {
		return nil, fmt.Errorf("read the columns of %s: %w", table, err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return nil, err
		}
		cols = append(cols, c)
	}
	return cols, rows.Err()
}

// rows adds INSERTs of the snapshot's rows of table (cols, filtered by
// where), in rowid order where there is one, batched.
func (g *stmtGen) rows(table string, cols []string, where string, whereArgs ...any) error {
	if len(cols) == 0 {
		return nil
	}
	names := make([]string, len(cols))
	sel := make([]string, 0, 2*len(cols))
	for i, c := range cols {
		names[i] = rawsqlite.QuoteIdent(c)
		// The storage class, then the value through an expression: an
		// expression has no declared type, so the driver hands back what
		// is stored (a DATETIME column's text stays text).
		sel = append(sel, "typeof("+names[i]+")", "+"+names[i])
	}
	rows, err := g.q.QueryContext(g.ctx, "SELECT "+strings.Join(sel, ", ")+" FROM "+snapSchema+"."+rawsqlite.QuoteIdent(table)+where, whereArgs...)
	if err != nil {
		return fmt.Errorf("read the rows of %s: %w", table, err)
	}
	defer rows.Close()
	head := "INSERT INTO main." + rawsqlite.QuoteIdent(table) + " (" + strings.Join(names, ", ") + ") VALUES "
	dest := make([]any, 2*len(cols))
	vals := make([]any, 2*len(cols))
	for i := range dest {
		dest[i] = &vals[i]
	}
	var tuples []string
	var args []any
	flush := func() {
		if len(tuples) > 0 {
			g.add(head+strings.Join(tuples, ", "), args...)
			tuples, args = nil, nil
		}
	}
	marks := make([]string, len(cols))
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return fmt.Errorf("read the rows of %s: %w", table, err)
		}
		for i := range cols {
			typ, _ := vals[2*i].(string)
			mark, arg, size := encodeValue(typ, vals[2*i+1])
			marks[i] = mark
			if mark == "?" || mark == castText {
				args = append(args, arg)
			}
			g.bytes += size
		}
		if g.max > 0 && g.bytes > g.max {
			return &TooLargeError{Bytes: g.bytes, Max: g.max}
		}
		tuples = append(tuples, "("+strings.Join(marks, ", ")+")")
		if len(tuples) >= rowBatch || len(args)+len(cols) > argBatch {
			flush()
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("read the rows of %s: %w", table, err)
	}
	flush()
	return nil
}

// castText sends a text value as its bytes: rqlite v8 reads a text
// argument of the form x'hex' as a BLOB, and JSON cannot carry text that
// is not UTF-8.
const castText = "CAST(? AS TEXT)"

// encodeValue is how one stored value goes into the request: its place
// in the VALUES tuple (a literal, "?" or castText), the argument, and
// about how many bytes it adds to the request. Every storage class comes
// back as it was: an integer as int64, a REAL as float64 (infinities as
// literals, which JSON cannot carry), a BLOB as bytes (an empty one as
// X”), text as a string.
func encodeValue(typ string, v any) (mark string, arg any, size int64) {
	switch typ {
	case "null":
		return "NULL", nil, 4
	case "integer":
		return "?", v, 20
	case "real":
		f, _ := v.(float64)
		switch {
		case math.IsInf(f, 1):
			return "9e999", nil, 5
		case math.IsInf(f, -1):
			return "-9e999", nil, 6
		}
		return "?", f, 24
	case "blob":
		b, _ := v.([]byte)
		if len(b) == 0 {
			return "X''", nil, 3
		}
		return "?", b, 4 * int64(len(b))
	}
	var s string
	switch x := v.(type) {
	case string:
		s = x
	case []byte:
		s = string(x)
	}
	if hexLike(s) || !utf8.ValidString(s) {
		return castText, []byte(s), 4 * int64(len(s))
	}
	return "?", s, int64(len(s)) + 2
}

// hexLike is text rqlite v8 might take for a BLOB literal: x'...' after
// trimming spaces (a superset of what its parser turns into one).
func hexLike(s string) bool {
	t := strings.TrimSpace(s)
	return len(t) >= 3 && (t[0] == 'x' || t[0] == 'X') && t[1] == '\'' && t[len(t)-1] == '\''
}
