package restore

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// valuesSchema holds values whose storage class the request must keep:
// a BLOB, text that looks like a BLOB literal, text that is not UTF-8, an
// empty BLOB, REALs that look like integers, infinities, the largest
// integer, and text in a DATETIME column (which a driver may turn into a
// time).
const valuesSchema = `
CREATE TABLE vals (k INTEGER PRIMARY KEY, v, d DATETIME, r REAL);
INSERT INTO vals VALUES
  (1, x'00ff10', '2026-01-01 10:00:00', 2.0),
  (2, 'x''41''', NULL, 9e999),
  (3, CAST(x'41ff42' AS TEXT), 'not a time', -9e999),
  (4, x'', '', -0.1),
  (5, 9223372036854775807, 5, 0.30000000000000004),
  (6, ' X''0a'' ', NULL, NULL),
  (7, 1.5, NULL, 1e-300);
`

// valsState shows every value of vals with its storage class.
const valsState = "SELECT k, typeof(v), hex(v), typeof(d), hex(d), typeof(r), quote(r) FROM vals ORDER BY k"

// applyLocal runs stmts in one transaction of db: the tests' stand-in for
// the cluster, which runs a request as one transaction too.
func applyLocal(ctx context.Context, db *sql.DB, stmts []memory.Stmt) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer func() { _ = tx.Rollback() }()
	for i, st := range stmts {
		if _, err := tx.ExecContext(ctx, st.SQL, st.Args...); err != nil {
			return fmt.Errorf("statement %d (%s): %w", i, firstLine(st.SQL), err)
		}
	}
	return tx.Commit()
}

// copyDB copies the database at src to dst through the backup API.
func copyDB(t *testing.T, src, dst string) {
	t.Helper()
	c, err := rawsqlite.Open(src, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Backup(dst); err != nil {
		t.Fatal(err)
	}
}

// clusterSetup is setup with the values table and the cluster's guard
// objects (a cluster's file has them): the database after the snapshot,
// and the snapshot.
func clusterSetup(t *testing.T) (db, snap string) {
	t.Helper()
	db, snap, store := setupWith(t, agentSchema+valuesSchema)
	store.Close()
	var ddl []string
	for _, st := range memory.ClusterSchema() {
		ddl = append(ddl, st.SQL)
	}
	sqlitetest.ExecFile(t, db, strings.Join(ddl, ";\n"))
	sqlitetest.ExecFile(t, db, "DROP TABLE vals")
	return db, snap
}

// requestFor plans the restore of snap over db (as a copy of the
// cluster's state) and returns its whole request.
func requestFor(t *testing.T, db, snap string) (*clusterPlan, memory.Event, []memory.Stmt) {
	t.Helper()
	cp, err := planFromFiles(context.Background(), db, snap, 0)
	if err != nil {
		t.Fatal(err)
	}
	ev, stmts, err := cp.request(ClusterOptions{Nodes: []string{"http://127.0.0.1:4001"}, Snapshot: snap, Reason: "undo the cleanup"}, "/safety.db", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	return cp, ev, stmts
}

func openDB(t *testing.T, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestClusterStatementsMatchFileRestore applies the cluster request to a
// copy of a database and the file form's restore to another: the agent's
// objects and rows come out the same, values with their storage classes,
// and the memory only grows by the restore's event and audit row.
func TestClusterStatementsMatchFileRestore(t *testing.T) {
	ctx := context.Background()
	db, snap := clusterSetup(t)
	dir := t.TempDir()
	fileForm, clusterForm := filepath.Join(dir, "file.db"), filepath.Join(dir, "cluster.db")
	copyDB(t, db, fileForm)
	copyDB(t, db, clusterForm)
	eventsBefore := query(t, db, "SELECT id, hash FROM memory_events ORDER BY id")
	auditBefore := query(t, db, "SELECT * FROM query_log ORDER BY id")
	checkpointsBefore := query(t, db, "SELECT * FROM memory_checkpoints ORDER BY id")

	if _, err := Run(ctx, Options{DB: fileForm, Snapshot: snap, Out: &bytes.Buffer{}}); err != nil {
		t.Fatal(err)
	}
	cp, ev, stmts := requestFor(t, clusterForm, snap)
	if err := applyLocal(ctx, openDB(t, clusterForm), stmts); err != nil {
		t.Fatal(err)
	}

	if got, want := state(t, clusterForm), state(t, fileForm); got != want {
		t.Errorf("the cluster request left:\n%s\nthe file form:\n%s", got, want)
	}
	if got, want := query(t, clusterForm, valsState), query(t, snap, valsState); got != want {
		t.Errorf("values after the cluster request:\n%s\nin the snapshot:\n%s", got, want)
	}
	if got, want := query(t, clusterForm, "SELECT count(*) FROM log"), query(t, snap, "SELECT count(*) FROM log"); got != want {
		t.Errorf("a trigger fired while rows were inserted: log has %s rows, want %s", got, want)
	}
	sqlitetest.ExecFile(t, clusterForm, "INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')")
	if got := query(t, clusterForm, "PRAGMA integrity_check"); got != "ok\n" {
		t.Errorf("integrity_check: %s", got)
	}

	// The memory: every row as it was, one event and one audit row more.
	events := query(t, clusterForm, "SELECT id, hash FROM memory_events ORDER BY id")
	if !strings.HasPrefix(events, eventsBefore) || events == eventsBefore {
		t.Errorf("events before:\n%s\nafter:\n%s", eventsBefore, events)
	}
	if got := query(t, clusterForm, "SELECT id, kind FROM memory_events ORDER BY id DESC LIMIT 1"); got != fmt.Sprintf("%d|restore\n", ev.ID) || ev.ID != cp.Head.ID+1 {
		t.Errorf("the newest event is %q, want %d|restore", got, ev.ID)
	}
	if got := query(t, clusterForm, "SELECT * FROM query_log ORDER BY id"); !strings.HasPrefix(got, auditBefore) {
		t.Errorf("the audit log was rewritten:\n%s\nwas:\n%s", got, auditBefore)
	}
	if got := query(t, clusterForm, "SELECT tool, ok, query, json_extract(detail, '$.event_id'), json_extract(detail, '$.safety_snapshot') FROM query_log ORDER BY id DESC LIMIT 1"); got != fmt.Sprintf("restore|1|%s|%d|/safety.db\n", snap, ev.ID) {
		t.Errorf("the restore's audit row: %s", got)
	}
	if got := query(t, clusterForm, "SELECT * FROM memory_checkpoints ORDER BY id"); got != checkpointsBefore {
		t.Errorf("checkpoints changed:\n%s\nwere:\n%s", got, checkpointsBefore)
	}
	content := query(t, clusterForm, fmt.Sprintf("SELECT content FROM memory_events WHERE id = %d", ev.ID))
	for _, part := range []string{snap, "through the rqlite cluster", "reason: undo the cleanup", "/safety.db", "tables replaced: notes", "removed: table later"} {
		if !strings.Contains(content, part) {
			t.Errorf("the restore event lacks %q:\n%s", part, content)
		}
	}
	store, err := memory.OpenExisting(ctx, clusterForm, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := store.Verify(ctx)
	store.Close()
	if err != nil || !v.OK || v.Events != ev.ID {
		t.Fatalf("verify: %+v %v", v, err)
	}
	// The same request again fails on its guard: the head moved.
	if err := applyLocal(ctx, openDB(t, clusterForm), stmts); err == nil || !strings.Contains(err.Error(), "statement 0 ") || !memory.GuardFailed(err.Error()) {
		t.Errorf("the request applied twice: %v", err)
	}
}

// TestClusterGuard: a request made from a state the database has left
// (an audit row or an event written since) fails as a whole.
func TestClusterGuard(t *testing.T) {
	ctx := context.Background()
	db, snap := clusterSetup(t)
	for _, tc := range []struct{ name, write string }{
		{"audit row", "INSERT INTO query_log (ts, session, tool, ok, duration_ms) VALUES ('2026-12-05T00:00:00.000Z', 's', 'read_query', 1, 0)"},
		{"nothing written since", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			copyPath := filepath.Join(t.TempDir(), "c.db")
			copyDB(t, db, copyPath)
			_, _, stmts := requestFor(t, copyPath, snap)
			before := state(t, copyPath)
			conn := openDB(t, copyPath)
			if tc.write == "" {
				// Something the guard lets pass: the request applies.
				if err := applyLocal(ctx, conn, stmts); err != nil {
					t.Fatal(err)
				}
				return
			}
			if _, err := conn.ExecContext(ctx, tc.write); err != nil {
				t.Fatal(err)
			}
			err := applyLocal(ctx, conn, stmts)
			if err == nil || !strings.Contains(err.Error(), "statement 0 ") || !memory.GuardFailed(err.Error()) {
				t.Fatalf("after %s the request gave %v, want its guard to fail", tc.name, err)
			}
			if got := state(t, copyPath); got != before {
				t.Errorf("a failed request changed the agent's objects")
			}
		})
	}
	// An event appended since moves the head.
	copyPath := filepath.Join(t.TempDir(), "e.db")
	copyDB(t, db, copyPath)
	_, _, stmts := requestFor(t, copyPath, snap)
	store, err := memory.OpenExisting(ctx, copyPath, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.Append(ctx, "s", "note", "written meanwhile"); err != nil {
		t.Fatal(err)
	}
	store.Close()
	if err := applyLocal(ctx, openDB(t, copyPath), stmts); err == nil || !memory.GuardFailed(err.Error()) {
		t.Fatalf("after an append the request gave %v, want its guard to fail", err)
	}
}

func TestClusterRequestBound(t *testing.T) {
	db, snap := clusterSetup(t)
	_, err := planFromFiles(context.Background(), db, snap, 64)
	var tl *TooLargeError
	if !errors.As(err, &tl) || !strings.Contains(err.Error(), "--max-request-mb") || !strings.Contains(err.Error(), "nothing was changed") {
		t.Fatalf("a request over its bound: %v", err)
	}
	cp, err := planFromFiles(context.Background(), db, snap, 0)
	if err != nil || cp.Bytes <= 64 {
		t.Fatalf("unbounded: %v, %d bytes", err, cp.Bytes)
	}
}

func TestEncodeValue(t *testing.T) {
	for _, tc := range []struct {
		typ  string
		v    any
		mark string
		arg  any
	}{
		{"null", nil, "NULL", nil},
		{"integer", int64(math.MaxInt64), "?", int64(math.MaxInt64)},
		{"real", 2.0, "?", 2.0},
		{"real", math.Inf(1), "9e999", nil},
		{"real", math.Inf(-1), "-9e999", nil},
		{"blob", []byte{0, 255}, "?", []byte{0, 255}},
		{"blob", []byte{}, "X''", nil},
		{"text", "plain", "?", "plain"},
		{"text", "x'41'", castText, []byte("x'41'")},
		{"text", " X'' ", castText, []byte(" X'' ")},
		{"text", "x'", "?", "x'"},
		{"text", "a\xffb", castText, []byte("a\xffb")},
	} {
		mark, arg, _ := encodeValue(tc.typ, tc.v)
		if mark != tc.mark || fmt.Sprint(arg) != fmt.Sprint(tc.arg) {
			t.Errorf("encodeValue(%s, %#v) = %s, %#v; want %s, %#v", tc.typ, tc.v, mark, arg, tc.mark, tc.arg)
		}
	}
}
