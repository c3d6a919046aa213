package restore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// applyAgentObjects replaces the agent's objects of the database ("main")
// with the snapshot's, inside tx: it drops the current ones, creates the
// snapshot's from their stored SQL, copies their rows (rowids kept, so an
// external-content full-text index still points at the right rows), and
// only then creates indexes, views and triggers, so that no trigger fires
// while the rows are copied. Server objects are never touched. Foreign
// keys must be off on the connection (they are by default).
func applyAgentObjects(ctx context.Context, tx *sql.Tx, cur, snap *catalog) error {
	exec := func(stmt string, args ...any) error {
		if _, err := tx.ExecContext(ctx, stmt, args...); err != nil {
			return fmt.Errorf("%s: %w", firstLine(stmt), err)
		}
		return nil
	}
	// Triggers and views first, then tables: dropping a table drops its
	// indexes and triggers, a virtual table its shadow tables.
	for _, typ := range []string{"trigger", "view", "table"} {
		for _, o := range slices.Backward(cur.agent(typ)) {
			if o.list == "shadow" {
				continue
			}
			if err := exec("DROP " + strings.ToUpper(typ) + " IF EXISTS main." + rawsqlite.QuoteIdent(o.name)); err != nil {
				return err
			}
		}
	}
	tables := snap.agent("table")
	for _, o := range tables {
		if o.list == "shadow" {
			continue // its virtual table creates it
		}
		if err := exec(o.sql); err != nil {
			return err
		}
	}
	for _, o := range tables {
		if o.list == "virtual" {
			continue // its rows live in its shadow tables
		}
		if err := copyRows(ctx, tx, o); err != nil {
			return err
		}
	}
	if err := copyUpkeep(ctx, tx, cur, snap, tables); err != nil {
		return err
	}
	for _, typ := range []string{"index", "view", "trigger"} {
		for _, o := range snap.agent(typ) {
			if o.sql == "" {
				continue
			}
			if err := exec(o.sql); err != nil {
				return err
			}
		}
	}
	return nil
}

// copyRows copies the snapshot's rows of table o into the new main table
// of the same definition. A shadow table was filled by its virtual table's
// creation and is emptied first.
func copyRows(ctx context.Context, tx *sql.Tx, o object) error {
	cols, err := storedColumns(ctx, tx, o.name)
	if err != nil {
		return err
	}
	if !o.withoutRowid {
		if alias := rowidAlias(cols); alias != "" {
			cols = append([]string{alias}, cols...)
		}
	}
	if len(cols) == 0 {
		return nil
	}
	list := make([]string, len(cols))
	for i, c := range cols {
		list[i] = rawsqlite.QuoteIdent(c)
	}
	names := strings.Join(list, ", ")
	if o.list == "shadow" {
		if _, err := tx.ExecContext(ctx, "DELETE FROM main."+rawsqlite.QuoteIdent(o.name)); err != nil {
			return fmt.Errorf("empty %s: %w", o.name, err)
		}
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO main."+rawsqlite.QuoteIdent(o.name)+" ("+names+") SELECT "+names+" FROM "+snapSchema+"."+rawsqlite.QuoteIdent(o.name)); err != nil {
		return fmt.Errorf("copy the rows of %s: %w", o.name, err)
	}
	return nil
}

// storedColumns are the snapshot table's columns that hold values: not
// generated ones, which SQLite computes again.
func storedColumns(ctx context.Context, q querier, table string) ([]string, error) {
	rows, err := q.QueryContext(ctx, "SELECT name FROM pragma_table_xinfo(?, ?) WHERE hidden = 0 ORDER BY cid", table, snapSchema)
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

// rowidAlias is a name of the rowid that no column shadows ("" when all
// three are column names; an INTEGER PRIMARY KEY column is the rowid
// anyway and is copied as a column).
func rowidAlias(cols []string) string {
	for _, alias := range []string{"rowid", "_rowid_", "oid"} {
		if !slices.ContainsFunc(cols, func(c string) bool { return rawsqlite.SameName(c, alias) }) {
			return alias
		}
	}
	return ""
}

// copyUpkeep brings back SQLite's bookkeeping of the restored tables: the
// AUTOINCREMENT counters (sqlite_sequence, which the copy set to the
// highest rowid, not to the highest ever used) and ANALYZE's statistics,
// where both files have the table for them.
func copyUpkeep(ctx context.Context, tx *sql.Tx, cur, snap *catalog, tables []object) error {
	type upkeep struct{ table, key string }
	for _, u := range []upkeep{{"sqlite_sequence", "name"}, {"sqlite_stat1", "tbl"}, {"sqlite_stat4", "tbl"}} {
		if !snap.has(u.table) {
			continue
		}
		var inMain int
		// sqlite_sequence appears in main with the first AUTOINCREMENT
		// table, which the restore may just have created.
		if err := tx.QueryRowContext(ctx, "SELECT count(*) FROM main.sqlite_schema WHERE name = ?", u.table).Scan(&inMain); err != nil {
			return err
		}
		if inMain == 0 {
			continue
		}
		for _, o := range tables {
			if _, err := tx.ExecContext(ctx, "DELETE FROM main."+u.table+" WHERE "+u.key+" = ?", o.name); err != nil {
				return fmt.Errorf("restore %s of %s: %w", u.table, o.name, err)
			}
			if _, err := tx.ExecContext(ctx, "INSERT INTO main."+u.table+" SELECT * FROM "+snapSchema+"."+u.table+" WHERE "+u.key+" = ?", o.name); err != nil {
				return fmt.Errorf("restore %s of %s: %w", u.table, o.name, err)
			}
		}
	}
	return nil
}

// firstLine is the start of a statement, for error messages.
func firstLine(stmt string) string {
	line, _, cut := strings.Cut(stmt, "\n")
	if cut || len(line) > 80 {
		if len(line) > 80 {
			line = line[:80]
		}
		return line + " ..."
	}
	return line
}
