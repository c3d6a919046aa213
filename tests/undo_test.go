package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

const undoFixture = `
CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE, note TEXT, data BLOB);
CREATE INDEX child_pid ON child(pid);
CREATE TABLE nokey(a, b);
CREATE TABLE wr(k TEXT PRIMARY KEY, v REAL, n) WITHOUT ROWID;
CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT);
CREATE TRIGGER parent_gone AFTER DELETE ON parent BEGIN INSERT INTO audit(what) VALUES ('deleted ' || old.name); END;
CREATE VIRTUAL TABLE ft USING fts5(body);
INSERT INTO parent VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO child VALUES (10, 1, 'a', x'00ff00'), (11, 1, NULL, NULL), (12, 2, '', x''), (13, 3, 'c', randomblob(3000));
INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (NULL, 2.5), (x'01', NULL);
INSERT INTO wr VALUES ('x', 1.5, NULL), ('y', NULL, 'n'), ('z', -0.0, 7);
INSERT INTO audit(what) VALUES ('start');
INSERT INTO ft VALUES ('hello world'), ('undo records');`

// agentDigest hashes the definition of every agent object and every row
// of every agent table (not the server's, not FTS5's shadow tables), each
// value with its storage class.
func agentDigest(t *testing.T, path string) string {
	t.Helper()
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	h := sha256.New()
	var tables []string
	eachRaw(t, c, `SELECT s.type, s.name, s.sql, coalesce(l.type, '') FROM sqlite_schema s LEFT JOIN pragma_table_list l ON l.name = s.name AND l.schema = 'main'
		WHERE s.name NOT LIKE 'sqlite\_%' ESCAPE '\' ORDER BY s.type, s.name`, func(st *rawsqlite.Stmt) {
		name := st.ColumnText(1)
		if policy.IsProtected(name) || strings.HasPrefix(name, "memory_") || st.ColumnText(3) == "shadow" {
			return
		}
		fmt.Fprintf(h, "%s %s %s\n", st.ColumnText(0), name, st.ColumnText(2))
		if st.ColumnText(0) == "table" {
			tables = append(tables, name)
		}
	})
	for _, tbl := range tables {
		eachRaw(t, c, `SELECT * FROM "`+tbl+`" ORDER BY 1`, func(st *rawsqlite.Stmt) {
			for i := range st.ColumnCount() {
				if st.ColumnType(i) == rawsqlite.TypeBlob {
					fmt.Fprintf(h, "|B%x", st.ColumnBlob(i))
				} else {
					fmt.Fprintf(h, "|%d:%s", st.ColumnType(i), st.ColumnText(i))
				}
			}
			fmt.Fprintf(h, "\n")
		})
	}
	return hex.EncodeToString(h.Sum(nil))
}

func eachRaw(t *testing.T, c *rawsqlite.Conn, query string, fn func(*rawsqlite.Stmt)) {
	t.Helper()
	if err := c.Each(query, func(st *rawsqlite.Stmt) error {
		fn(st)
		return nil
	}); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// applyUndo applies the undo record at rec to db as restore does.
func applyUndo(t testing.TB, db, rec string, force bool) (snapshot.Result, error) {
	t.Helper()
	c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.BusyTimeout(5 * time.Second); err != nil {
		t.Fatal(err)
	}
	return snapshot.Apply(c, rec, snapshot.Options{Force: force})
}

func undoDB(t *testing.T) string {
	t.Helper()
	db := newDB(t)
	direct := openDirect(t, db)
	if _, err := direct.Exec(undoFixture); err != nil {
		t.Fatal(err)
	}
	direct.Close()
	return db
}

// destroy runs a destructive_query and returns the snapshot it names and
// its audit row's detail.
func destroy(t *testing.T, s *session, sql string) (string, map[string]any) {
	t.Helper()
	text := s.ok("destructive_query", map[string]any{"query": sql, "reason": "e2e"})
	i := strings.Index(text, "; snapshot: ")
	if i < 0 {
		t.Fatalf("%s: %q names no snapshot", sql, text)
	}
	path := text[i+len("; snapshot: "):]
	// The row is written after the reply, and an earlier server on the
	// file may still be writing its own: wait for the row naming path.
	var detail map[string]any
	if !waitFor(10*time.Second, func() bool {
		log := auditLog(t, s.db)
		for i := len(log) - 1; i >= 0; i-- {
			var d map[string]any
			if log[i].tool == "destructive_query" && json.Unmarshal([]byte(log[i].detail), &d) == nil && d["snapshot"] == path {
				detail = d
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no destructive_query audit row names %s: %+v", path, auditLog(t, s.db))
	}
	return path, detail
}

// TestUndoRoundTrips: over stdio with --snapshot-mode undo, each
// destructive statement leaves an undo record (or, for FTS5, a full copy
// that says why); applying the record puts every agent table back in the
// same rows and every object in the same definition.
func TestUndoRoundTrips(t *testing.T) {
	t.Parallel()
	db := undoDB(t)
	s := start(t, db, "--snapshot-mode", "undo", "--snapshots", "100", "--standby-workers", "1")
	for _, tt := range []struct{ name, sql string }{
		{"delete with where", "DELETE FROM child WHERE id IN (10, 12)"},
		{"unfiltered update", "UPDATE child SET note = 'x'"},
		{"unfiltered delete", "DELETE FROM nokey"},
		{"cascade", "DELETE FROM parent WHERE id = 1"},
		{"trigger writes another table", "DELETE FROM parent WHERE id = 3"},
		{"drop table", "DROP TABLE child"},
		{"drop parent table", "DROP TABLE parent"},
		{"drop index", "DROP INDEX child_pid"},
		{"rename table", "ALTER TABLE wr RENAME TO wr2"},
		{"add column", "ALTER TABLE child ADD COLUMN extra TEXT DEFAULT 'd'"},
		{"drop column", "ALTER TABLE child DROP COLUMN note"},
		{"without rowid", "DELETE FROM wr WHERE k <> 'y'"},
		{"no declared key", "DELETE FROM nokey WHERE a = 1"},
		{"blobs and nulls", "UPDATE child SET data = CASE WHEN data IS NULL THEN x'' ELSE NULL END, note = NULL"},
	} {
		before := agentDigest(t, db)
		path, detail := destroy(t, s, tt.sql)
		if !strings.HasSuffix(path, "Z.undo.db") || detail["snapshot_kind"] != "undo" || detail["snapshot_bytes"].(float64) <= 0 {
			t.Fatalf("%s: snapshot %s, detail %v", tt.name, path, detail)
		}
		if agentDigest(t, db) == before {
			t.Fatalf("%s: the statement changed nothing", tt.name)
		}
		if _, err := applyUndo(t, db, path, false); err != nil {
			t.Fatalf("%s: %v", tt.name, err)
		}
		if agentDigest(t, db) != before {
			t.Fatalf("%s: the undo did not put every row back", tt.name)
		}
	}

	t.Run("fts5 falls back to a full copy", func(t *testing.T) {
		path, detail := destroy(t, s, "DELETE FROM ft WHERE body MATCH 'hello'")
		if !strings.HasSuffix(path, "Z.db") || snapshot.IsRecord(path) || detail["snapshot_kind"] != "full" ||
			!strings.Contains(fmt.Sprint(detail["snapshot_why"]), "virtual table ft") {
			t.Fatalf("snapshot %s, detail %v", path, detail)
		}
	})

	t.Run("two records in a row, newest first", func(t *testing.T) {
		before := agentDigest(t, db)
		first, _ := destroy(t, s, "UPDATE child SET note = 'first'")
		middle := agentDigest(t, db)
		second, _ := destroy(t, s, "DELETE FROM child WHERE id > 10")
		if _, err := applyUndo(t, db, second, false); err != nil {
			t.Fatal(err)
		}
		if agentDigest(t, db) != middle {
			t.Fatal("the newer record did not restore the state between the two")
		}
		if _, err := applyUndo(t, db, first, false); err != nil {
			t.Fatal(err)
		}
		if agentDigest(t, db) != before {
			t.Fatal("the two records did not restore the first state")
		}
	})

	t.Run("a row changed since is refused and named, then forced", func(t *testing.T) {
		before := agentDigest(t, db)
		path, _ := destroy(t, s, "DELETE FROM child WHERE id >= 11")
		s.ok("write_query", q("INSERT INTO child VALUES (12, 2, 'new', NULL)"))
		changed := agentDigest(t, db)
		_, err := applyUndo(t, db, path, false)
		var ce *snapshot.ConflictError
		if !errors.As(err, &ce) || len(ce.Conflicts) != 1 || !strings.Contains(err.Error(), "child (id=12): a row with this key exists again: note is 'new'") {
			t.Fatalf("apply = %v", err)
		}
		if agentDigest(t, db) != changed {
			t.Fatal("a refused undo changed rows")
		}
		if _, err := applyUndo(t, db, path, true); err != nil {
			t.Fatal(err)
		}
		if agentDigest(t, db) != before {
			t.Fatal("a forced undo did not put the rows back")
		}
	})
}

// TestUndoRetentionAndAuto: retention counts undo records with full
// copies; auto takes a full copy of a database up to --snapshot-full-mb.
func TestUndoRetentionAndAuto(t *testing.T) {
	t.Parallel()
	db := undoDB(t)
	s := start(t, db, "--snapshot-mode", "undo", "--snapshots", "2", "--standby-workers", "1")
	var kept []string
	for i := range 3 {
		path, _ := destroy(t, s, fmt.Sprintf("UPDATE child SET note = 'n%d'", i))
		kept = append(kept, filepath.Base(path))
	}
	if files := snapshotFiles(t, db); strings.Join(files, ",") != strings.Join(kept[1:], ",") {
		t.Fatalf("snapshot folder %v, want the newest two %v", files, kept[1:])
	}
	s.c.Close()
	a := start(t, db, "--snapshots", "2", "--standby-workers", "1")
	path, detail := destroy(t, a, "DELETE FROM child WHERE id = 13")
	if !strings.HasSuffix(path, "Z.db") || detail["snapshot_kind"] != "full" || !strings.Contains(fmt.Sprint(detail["snapshot_why"]), "at most --snapshot-full-mb=64") {
		t.Fatalf("auto on a small database: %s, %v", path, detail)
	}
	if files := snapshotFiles(t, db); len(files) != 2 || files[0] != kept[2] {
		t.Fatalf("snapshot folder %v", files)
	}
}

// TestKilledUndoRecordLeavesNothing: a worker killed while it writes the
// undo record (here: copying a 120 MB table DROP TABLE removes) leaves no
// record, partial or complete, and no change.
func TestKilledUndoRecordLeavesNothing(t *testing.T) {
	t.Parallel()
	db := bigDB(t)
	s := start(t, db, "--snapshot-mode", "undo", "--standby-workers", "0", "--query-timeout", "30")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "destructive_query"
		req.Params.Arguments = map[string]any{"query": "DROP TABLE t", "reason": "test"}
		_, err := s.c.CallTool(ctx, req)
		errc <- err
	}()
	dir := filepath.Join(filepath.Dir(db), "memory.snapshots")
	if !waitFor(20*time.Second, func() bool {
		for _, f := range snapshotFiles(t, db) {
			if info, err := os.Stat(filepath.Join(dir, f)); err == nil && strings.HasSuffix(f, ".partial") && info.Size() >= 8<<20 {
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no undo record being written: %v", snapshotFiles(t, db))
	}
	cancel()
	<-errc
	waitAudit(t, db, "CANCELLED")
	if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatal("worker alive after the cancellation")
	}
	if !waitFor(10*time.Second, func() bool { return len(snapshotFiles(t, db)) == 0 }) {
		t.Fatalf("snapshot folder after the kill: %v", snapshotFiles(t, db))
	}
	if n := rowCount(t, db); n != 1200 {
		t.Fatalf("%d rows: the statement ran", n)
	}
}

// TestUndoRestoreCommand: `restore` applies undo records: newest first
// back to the first state, a row changed since refused and named (exit 1,
// nothing changed), then --force; --everything refuses a record; the
// memory log keeps growing (a restore event per applied record).
func TestUndoRestoreCommand(t *testing.T) {
	t.Parallel()
	db := undoDB(t)
	s := start(t, db, "--snapshot-mode", "undo", "--standby-workers", "1")
	before := agentDigest(t, db)
	first, _ := destroy(t, s, "DELETE FROM parent WHERE id = 1")
	second, _ := destroy(t, s, "ALTER TABLE child DROP COLUMN note")
	s.c.Close()

	if out, code := restoreRun(t, "--db", db, "--everything", second); code == 0 || !strings.Contains(out, "is an undo record") {
		t.Fatalf("--everything with an undo record: exit %d\n%s", code, out)
	}
	out := restoreOK(t, "--db", db, second)
	if !strings.Contains(out, "ALTER TABLE child DROP COLUMN note") || !strings.Contains(out, "restored: ") {
		t.Fatalf("restore output:\n%s", out)
	}
	restoreOK(t, "--db", db, first)
	if agentDigest(t, db) != before {
		t.Fatal("the two records, newest first, did not restore the first state")
	}
	if n := strings.TrimSpace(queryText(t, db, "SELECT count(*) FROM memory_events WHERE kind = 'restore'")); n != "2" {
		t.Fatalf("%s restore events, want 2", n)
	}

	// A conflict: the row the undo would put back exists again.
	s = start(t, db, "--snapshot-mode", "undo", "--standby-workers", "1")
	third, _ := destroy(t, s, "DELETE FROM child WHERE id = 13")
	s.ok("write_query", q("INSERT INTO child VALUES (13, 3, 'again', NULL)"))
	s.c.Close()
	changed := agentDigest(t, db)
	out, code := restoreRun(t, "--db", db, third)
	if code == 0 || !strings.Contains(out, "child (id=13): a row with this key exists again: note is 'again', the record has 'c'") || !strings.Contains(out, "--force") {
		t.Fatalf("conflict: exit %d\n%s", code, out)
	}
	if agentDigest(t, db) != changed {
		t.Fatal("a refused restore changed rows")
	}
	out = restoreOK(t, "--db", db, "--force", third)
	if !strings.Contains(out, "overwritten (--force): child (id=13)") {
		t.Fatalf("forced restore output:\n%s", out)
	}
	if agentDigest(t, db) != before {
		t.Fatal("the forced restore did not put the row back")
	}
}

// safetyOf is the safety snapshot a restore's output names.
func safetyOf(t testing.TB, out string) string {
	t.Helper()
	const mark = "safety snapshot of the state before: "
	i := strings.Index(out, mark)
	if i < 0 {
		t.Fatalf("restore names no safety snapshot:\n%s", out)
	}
	return strings.TrimSpace(strings.SplitN(out[i+len(mark):], "\n", 2)[0])
}

// TestUndoRestoreKeepsARecordOfItself: restoring an undo record of rows
// keeps the state it replaces as an undo record of the restore (a few KiB
// beside a 12 MB database, where a full safety copy would be the whole
// file), and restoring that record undoes the restore; a record that
// recreates a table still gets a full safety copy.
func TestUndoRestoreKeepsARecordOfItself(t *testing.T) {
	t.Parallel()
	db := undoDB(t)
	direct := openDirect(t, db)
	if _, err := direct.Exec("CREATE TABLE ballast(b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 12) INSERT INTO ballast SELECT zeroblob(1 << 20) FROM n"); err != nil {
		t.Fatal(err)
	}
	direct.Close()
	s := start(t, db, "--snapshot-mode", "undo", "--standby-workers", "1")
	rows, _ := destroy(t, s, "DELETE FROM child WHERE id > 10")
	afterRows := agentDigest(t, db)
	table, _ := destroy(t, s, "DROP TABLE parent")
	s.c.Close()

	size := func(p string) int64 {
		t.Helper()
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	dbSize := size(db)

	full := safetyOf(t, restoreOK(t, "--db", db, table))
	if n := size(full); n < dbSize/2 {
		t.Fatalf("the safety snapshot of a restore that recreates a table is %d bytes, the database %d: want a full copy", n, dbSize)
	}
	rec := safetyOf(t, restoreOK(t, "--db", db, rows))
	if n := size(rec); n > 256<<10 || n*20 > dbSize {
		t.Fatalf("the safety of a rows-only restore is %d bytes beside a %d-byte database: want an undo record of the restore", n, dbSize)
	}
	if !strings.Contains(restoreOK(t, "--db", db, "--dry-run", rec), "from the undo record") {
		t.Fatalf("restore does not read %s as an undo record", rec)
	}
	restoreOK(t, "--db", db, rec)
	if agentDigest(t, db) != afterRows {
		t.Fatal("the safety record did not undo the restore")
	}
}
