package worker

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

func undoRequest(db, dir string, mode ipc.SnapshotKind, fullMB int, sql string) *ipc.Request {
	req := request(db, ipc.OpQuery, "destructive", sql)
	req.Snapshot = &ipc.Snapshot{Dir: dir, Stem: "w", Keep: 3, Partial: "w.test.partial", Mode: mode, FullMB: fullMB, Reason: "tidy up"}
	return req
}

// rows is every row of t and kids, and the schema, as text.
func rows(t *testing.T, db string) string {
	t.Helper()
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	for _, q := range []string{"SELECT type || name || sql FROM sqlite_schema ORDER BY name", "SELECT * FROM t ORDER BY id", "SELECT * FROM kids ORDER BY id"} {
		for _, row := range sqlitetest.ConnRows(t, c, q) {
			b.WriteString(row + "\n")
		}
	}
	return b.String()
}

func TestUndoSnapshot(t *testing.T) {
	log := hclog.NewNullLogger()

	t.Run("auto takes a full copy of a small database and an undo record of a large one", func(t *testing.T) {
		for _, tt := range []struct {
			fullMB   int
			kind     ipc.SnapshotKind
			suffix   string
			whyMatch string
		}{
			{64, ipc.SnapshotFull, "Z.db", "at most --snapshot-full-mb=64"},
			{0, ipc.SnapshotUndo, "Z.undo.db", "larger than --snapshot-full-mb=0"},
		} {
			db := testDB(t)
			dir := filepath.Join(t.TempDir(), "snaps")
			before := rows(t, db)
			resp := execute(undoRequest(db, dir, ipc.SnapshotAuto, tt.fullMB, "DELETE FROM t WHERE id = 2"), log)
			path, _ := resp.Detail.Fields()["snapshot"].(string)
			if !resp.OK || resp.Detail.Fields()["snapshot_kind"] != tt.kind || !strings.HasSuffix(path, tt.suffix) ||
				!strings.Contains(resp.Detail.Fields()["snapshot_why"].(string), tt.whyMatch) || !strings.HasSuffix(resp.Text, "; snapshot: "+path) {
				t.Fatalf("full_mb=%d: %+v", tt.fullMB, resp)
			}
			if names := dirNames(t, dir); len(names) != 1 {
				t.Fatalf("snapshot folder %v", names)
			}
			if tt.kind != ipc.SnapshotUndo {
				continue
			}
			rec, err := snapshot.ReadRecord(path)
			if err != nil || rec.Statement != "DELETE FROM t WHERE id = 2" || rec.Reason != "tidy up" || rec.Tables != "t" || rec.Rows != 1 {
				t.Fatalf("record %+v, %v", rec, err)
			}
			c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
			if err != nil {
				t.Fatal(err)
			}
			_, err = snapshot.Apply(c, path, snapshot.Options{})
			c.Close()
			if err != nil {
				t.Fatal(err)
			}
			if got := rows(t, db); got != before {
				t.Fatalf("after the undo:\n%s\nwant\n%s", got, before)
			}
		}
	})

	t.Run("statements the session cannot capture get a full copy, and say why", func(t *testing.T) {
		for _, tt := range []struct{ name, setup, sql, why string }{
			{"fts5", "CREATE VIRTUAL TABLE ft USING fts5(body); INSERT INTO ft VALUES ('hello')", "DELETE FROM ft", "virtual table ft"},
			// Found only once it ran: the rename rewrites kids' REFERENCES.
			{"rename a parent", "", "ALTER TABLE t RENAME TO t2", "definition of table kids"},
		} {
			t.Run(tt.name, func(t *testing.T) {
				db := testDB(t)
				if tt.setup != "" {
					c, _ := rawsqlite.Open(db, rawsqlite.ReadWrite)
					if err := c.Exec(tt.setup); err != nil {
						t.Fatal(err)
					}
					c.Close()
				}
				dir := filepath.Join(t.TempDir(), "snaps")
				resp := execute(undoRequest(db, dir, ipc.SnapshotUndo, 0, tt.sql), log)
				path, _ := resp.Detail.Fields()["snapshot"].(string)
				if !resp.OK || resp.Detail.Fields()["snapshot_kind"] != ipc.SnapshotFull || !strings.HasSuffix(path, "Z.db") || !strings.Contains(resp.Detail.Fields()["snapshot_why"].(string), tt.why) {
					t.Fatalf("%+v", resp)
				}
				if names := dirNames(t, dir); len(names) != 1 || snapshot.IsRecord(path) {
					t.Fatalf("snapshot folder %v", names)
				}
			})
		}
		// The statement that ran again after its record was given up ran once.
		db := testDB(t)
		execute(undoRequest(db, filepath.Join(t.TempDir(), "s"), ipc.SnapshotUndo, 0, "ALTER TABLE t RENAME TO t2"), log)
		c, _ := rawsqlite.Open(db, rawsqlite.ReadOnly)
		defer c.Close()
		st, _, err := c.Prepare("SELECT count(*) FROM t2")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Finalize()
		if ok, _ := st.Step(); !ok || st.ColumnInt64(0) != 3 {
			t.Fatal("t2 lost rows")
		}
	})

	t.Run("retention counts undo records and full copies together", func(t *testing.T) {
		db := testDB(t)
		dir := filepath.Join(t.TempDir(), "snaps")
		var kept []string
		for i, mode := range []ipc.SnapshotKind{ipc.SnapshotUndo, ipc.SnapshotFull, ipc.SnapshotUndo, ipc.SnapshotFull, ipc.SnapshotUndo} {
			req := undoRequest(db, dir, mode, 0, fmt.Sprintf("UPDATE t SET name = 'n%d'", i))
			req.Snapshot.Keep = 3
			resp := execute(req, log)
			if !resp.OK {
				t.Fatalf("call %d: %+v", i, resp)
			}
			kept = append(kept, filepath.Base(resp.Detail.Fields()["snapshot"].(string)))
		}
		if names := dirNames(t, dir); !slices.Equal(names, kept[2:]) {
			t.Fatalf("snapshot folder %v, want the newest three %v", names, kept[2:])
		}
	})

	t.Run("a record that fails before it is kept leaves no record and no change", func(t *testing.T) {
		db := testDB(t)
		dir := filepath.Join(t.TempDir(), "snaps")
		before := rows(t, db)
		undoRecordHook = func() { panic("stopped") }
		defer func() { undoRecordHook = func() {} }()
		resp := execute(undoRequest(db, dir, ipc.SnapshotUndo, 0, "DELETE FROM t"), log)
		if resp.OK || resp.Code != errcode.WorkerFailed {
			t.Fatalf("%+v", resp)
		}
		// Only the partial file, which the front removes after a worker ends.
		if names := dirNames(t, dir); !slices.Equal(names, []string{"w.test.partial"}) {
			t.Fatalf("snapshot folder %v", names)
		}
		if rows(t, db) != before {
			t.Fatal("the statement was kept")
		}
	})
}

// TestUndoOutOfMemoryTakesAFullCopy: a change whose old rows do not fit in
// the worker's heap limit (the session keeps a copy of each) gets a full
// copy instead, and the statement runs.
func TestUndoOutOfMemoryTakesAFullCopy(t *testing.T) {
	db := buildDB(t, "m.db", "CREATE TABLE big(id INTEGER PRIMARY KEY, b BLOB)",
		`INSERT INTO big(b) SELECT zeroblob(10000) FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 3000) SELECT x FROM s)`)
	old := rawsqlite.SetHardHeapLimit(16 << 20)
	defer rawsqlite.SetHardHeapLimit(old)
	dir := filepath.Join(t.TempDir(), "snaps")
	resp := execute(undoRequest(db, dir, ipc.SnapshotUndo, 0, "DELETE FROM big"), hclog.NewNullLogger())
	if !resp.OK || resp.Detail.Fields()["snapshot_kind"] != ipc.SnapshotFull || !strings.Contains(fmt.Sprint(resp.Detail.Fields()["snapshot_why"]), "too large to record") ||
		!strings.HasPrefix(resp.Text, "ok: 3000 rows affected; snapshot: ") {
		t.Fatalf("%+v", resp)
	}
	if names := dirNames(t, dir); len(names) != 1 {
		t.Fatalf("snapshot folder %v", names)
	}
}

// TestUndoUnfilteredDelete: DELETE without WHERE compiles to a table
// clear that reports no rows unless it is compiled again once the session
// records; the record must hold every row.
func TestUndoUnfilteredDelete(t *testing.T) {
	db := buildDB(t, "d.db", "CREATE TABLE plain(a, b)", "INSERT INTO plain VALUES (1, 'x'), (2, NULL), (3, x'00')")
	resp := execute(undoRequest(db, filepath.Join(t.TempDir(), "snaps"), ipc.SnapshotUndo, 0, "DELETE FROM plain"), hclog.NewNullLogger())
	if !resp.OK || resp.Detail.Fields()["snapshot_kind"] != ipc.SnapshotUndo || resp.Detail.Fields()["snapshot_rows"] != int64(3) {
		t.Fatalf("%+v", resp)
	}
}
