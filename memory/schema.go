package memory

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
)

// The bootstrap statements, byte for byte those of the reference server:
// SQLite stores the text (minus "IF NOT EXISTS") in sqlite_master, and
// get_schema shows it, so a file made by either server looks the same.
var (
	eventsDDL = []string{
		`CREATE TABLE IF NOT EXISTS memory_events (
    id        INTEGER PRIMARY KEY,
    ts        TEXT    NOT NULL,
    session   TEXT    NOT NULL,
    kind      TEXT    NOT NULL DEFAULT 'note',
    content   TEXT    NOT NULL,
    prev_hash TEXT    NOT NULL,
    hash      TEXT    NOT NULL UNIQUE
)`,
		`CREATE TRIGGER IF NOT EXISTS memory_events_no_update BEFORE UPDATE ON memory_events
    BEGIN SELECT RAISE(ABORT, 'memory_events is append-only'); END`,
		`CREATE TRIGGER IF NOT EXISTS memory_events_no_delete BEFORE DELETE ON memory_events
    BEGIN SELECT RAISE(ABORT, 'memory_events is append-only'); END`,
		`CREATE TABLE IF NOT EXISTS memory_checkpoints (
    id            INTEGER PRIMARY KEY,
    ts            TEXT    NOT NULL,
    session       TEXT    NOT NULL,
    summary       TEXT    NOT NULL,
    last_event_id INTEGER NOT NULL,
    head_hash     TEXT    NOT NULL
)`,
		`CREATE TRIGGER IF NOT EXISTS memory_checkpoints_no_update BEFORE UPDATE ON memory_checkpoints
    BEGIN SELECT RAISE(ABORT, 'memory_checkpoints is append-only'); END`,
		`CREATE TRIGGER IF NOT EXISTS memory_checkpoints_no_delete BEFORE DELETE ON memory_checkpoints
    BEGIN SELECT RAISE(ABORT, 'memory_checkpoints is append-only'); END`,
	}
	auditDDL = []string{
		`CREATE TABLE IF NOT EXISTS query_log (
    id          INTEGER PRIMARY KEY,
    ts          TEXT    NOT NULL,
    session     TEXT    NOT NULL,
    tool        TEXT    NOT NULL,
    query       TEXT,
    ok          INTEGER NOT NULL,
    rows        INTEGER,
    error       TEXT,
    duration_ms INTEGER NOT NULL,
    detail      TEXT
)`,
		`CREATE INDEX IF NOT EXISTS query_log_ts ON query_log(ts)`,
		`CREATE TRIGGER IF NOT EXISTS query_log_no_update BEFORE UPDATE ON query_log
    BEGIN SELECT RAISE(ABORT, 'query_log is append-only'); END`,
		`CREATE TRIGGER IF NOT EXISTS query_log_no_delete BEFORE DELETE ON query_log
    BEGIN SELECT RAISE(ABORT, 'query_log is append-only'); END`,
		`CREATE VIEW IF NOT EXISTS query_errors AS
-- description: failed tool calls, newest first; shows where queries go wrong
SELECT id, ts, tool, query, error FROM query_log WHERE ok = 0 ORDER BY id DESC`,
	}
)

// Server object names, as in sqlite_master: policy's list of the server's
// objects (policy.ProtectedTables and policy.ServerIndexes), the one home
// of these names.
const (
	TableEvents      = policy.TableEvents
	TableCheckpoints = policy.TableCheckpoints
	TableQueryLog    = policy.TableQueryLog
	ViewQueryErrors  = policy.ViewQueryErrors
)

// wantColumns is what the server needs of an existing table; a same-named
// table of another shape is refused instead of failing on the first append.
var wantColumns = map[string][]string{
	TableEvents:      {"id", "ts", "session", "kind", "content", "prev_hash", "hash"},
	TableCheckpoints: {"id", "ts", "session", "summary", "last_event_id", "head_hash"},
	TableQueryLog:    {"id", "ts", "session", "tool", "query", "ok", "rows", "error", "duration_ms", "detail"},
}

// bootstrap creates whatever of ddl is missing in one IMMEDIATE transaction,
// so two servers starting together on a new file do not race. Statements
// whose object exists are no-ops and do not touch sqlite_master. When every
// object exists (every start but the first) it only reads: a server then
// starts while another process holds the write lock.
func bootstrap(ctx context.Context, db *sql.DB, ddl []string) error {
	if complete, err := hasObjects(ctx, db, ddl); err != nil || complete {
		return err
	}
	tx, err := db.BeginTx(ctx, nil) // BEGIN IMMEDIATE via _txlock
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for _, stmt := range ddl {
		if _, err := tx.ExecContext(ctx, stmt); err != nil {
			return err
		}
	}
	return tx.Commit()
}

// checkColumns refuses a server table whose columns are not the expected
// ones (a user table that happens to share the name). It runs before the
// bootstrap, so a missing table is fine: the bootstrap creates it.
func checkColumns(ctx context.Context, db *sql.DB, tables ...string) error {
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, table)
		if err != nil {
			return err
		}
		var got []string
		for rows.Next() {
			var name string
			if err := rows.Scan(&name); err != nil {
				rows.Close()
				return err
			}
			got = append(got, name)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(got) > 0 && !slices.Equal(got, wantColumns[table]) {
			return fmt.Errorf("%w: table %s has columns %v, want %v", ErrSchemaMismatch, table, got, wantColumns[table])
		}
	}
	return nil
}

// ddlName finds the object a bootstrap statement creates.
var ddlName = regexp.MustCompile(`IF NOT EXISTS (\w+)`)

// hasObjects reports whether every object ddl creates is in sqlite_master.
func hasObjects(ctx context.Context, db *sql.DB, ddl []string) (bool, error) {
	names := make([]any, 0, len(ddl))
	marks := make([]string, 0, len(ddl))
	for _, stmt := range ddl {
		m := ddlName.FindStringSubmatch(stmt)
		if m == nil {
			return false, nil
		}
		names = append(names, m[1])
		marks = append(marks, "?")
	}
	var n int
	err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE name IN (`+strings.Join(marks, ", ")+`)`, names...).Scan(&n)
	return n == len(names), err
}
