package worker

import (
	"crypto/sha256"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// shopDB is a parent table with a cascading child, a SET NULL child, and
// an audit trigger.
func shopDB(t *testing.T) string {
	t.Helper()
	return buildDB(t, "shop.db",
		"CREATE TABLE orders (id INTEGER PRIMARY KEY, note TEXT)",
		"CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id) ON DELETE CASCADE)",
		"CREATE TABLE refs (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id) ON DELETE SET NULL)",
		"CREATE TABLE history (what TEXT)",
		"CREATE TRIGGER orders_history AFTER UPDATE ON orders BEGIN INSERT INTO history VALUES ('updated ' || old.id); END",
		"CREATE TABLE memory_events (id INTEGER PRIMARY KEY, content TEXT NOT NULL)",
		"INSERT INTO orders VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')",
		"INSERT INTO order_items VALUES (10, 1), (11, 1), (12, 1), (13, 2)",
		"INSERT INTO refs VALUES (20, 1)",
		"INSERT INTO history VALUES ('old 1'), ('old 2')",
	)
}

// digest is the database's content as SQLite reads it (never the file by
// hand: see the guide's lock trap), plus its schema.
func digest(t *testing.T, db string) [32]byte {
	t.Helper()
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var b strings.Builder
	var tables []string
	if err := eachRow(c, "SELECT name, sql FROM sqlite_schema ORDER BY name", func(st *rawsqlite.Stmt) {
		b.WriteString(st.ColumnText(0) + st.ColumnText(1) + "\n")
		if strings.HasPrefix(st.ColumnText(1), "CREATE TABLE") {
			tables = append(tables, st.ColumnText(0))
		}
	}); err != nil {
		t.Fatal(err)
	}
	for _, tb := range tables {
		for _, row := range sqlitetest.ConnRows(t, c, "SELECT * FROM "+rawsqlite.QuoteIdent(tb)) {
			b.WriteString(row + "\n")
		}
	}
	return sha256.Sum256([]byte(b.String()))
}

func eachRow(c *rawsqlite.Conn, sql string, fn func(*rawsqlite.Stmt)) error {
	st, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer st.Finalize()
	for {
		ok, err := st.Step()
		if err != nil || !ok {
			return err
		}
		fn(st)
	}
}

func previewRequest(db string, mode ipc.Mode, sql string) *ipc.Request {
	req := request(db, ipc.OpQuery, mode, sql)
	req.Preview = &ipc.PreviewRequest{}
	return req
}

func TestPreview(t *testing.T) {
	tests := []struct {
		name    string
		mode    ipc.Mode
		sql     string
		changes int64
		tables  []ipc.TableChange
		objects []ipc.ObjectChange
	}{
		{"delete cascades and sets null", "destructive", "DELETE FROM orders WHERE id = 1", 1,
			[]ipc.TableChange{{Table: "orders", Deleted: 1}, {Table: "order_items", Deleted: 3, Via: "ON DELETE CASCADE"}, {Table: "refs", Updated: 1, Via: "ON DELETE SET NULL"}}, nil},
		{"delete without where counts every row", "destructive", "DELETE FROM order_items", 4,
			[]ipc.TableChange{{Table: "order_items", Deleted: 4}}, nil},
		{"delete without where of a plain table (SQLite's truncate)", "destructive", "DELETE FROM history", 2,
			[]ipc.TableChange{{Table: "history", Deleted: 2}}, nil},
		{"update without where fires the trigger", "destructive", "UPDATE orders SET note = 'x'", 4,
			[]ipc.TableChange{{Table: "orders", Updated: 4}, {Table: "history", Inserted: 4, Via: "trigger orders_history", Triggers: []string{"orders_history"}}}, nil},
		{"drop table counts its rows and the cascade", "destructive", "DROP TABLE order_items", 0,
			nil, []ipc.ObjectChange{{Action: ipc.ObjectDrop, Type: "TABLE", Name: "order_items", Rows: 4}}},
		{"drop a parent table deletes through its foreign keys and drops its trigger", "destructive", "DROP TABLE orders", 0,
			[]ipc.TableChange{{Table: "order_items", Deleted: 4, Via: "ON DELETE CASCADE"}, {Table: "refs", Updated: 1, Via: "ON DELETE SET NULL"}},
			[]ipc.ObjectChange{{Action: ipc.ObjectDrop, Type: "TABLE", Name: "orders", Rows: 4}, {Action: ipc.ObjectDrop, Type: "TRIGGER", Name: "orders_history", Table: "orders"}}},
		{"alter", "destructive", "ALTER TABLE orders ADD COLUMN total REAL", 0,
			nil, []ipc.ObjectChange{{Action: ipc.ObjectAlter, Type: "TABLE", Name: "orders"}}},
		{"drop trigger", "destructive", "DROP TRIGGER orders_history", 0,
			nil, []ipc.ObjectChange{{Action: ipc.ObjectDrop, Type: "TRIGGER", Name: "orders_history", Table: "orders"}}},
		{"create trigger", "destructive", "CREATE TRIGGER t2 AFTER DELETE ON orders BEGIN SELECT 1; END", 0,
			nil, []ipc.ObjectChange{{Action: ipc.ObjectCreate, Type: "TRIGGER", Name: "t2", Table: "orders"}}},
		{"upsert overwrites", "write", "INSERT INTO orders VALUES (2, 'z') ON CONFLICT(id) DO UPDATE SET note = excluded.note", 1,
			[]ipc.TableChange{{Table: "orders", Updated: 1}, {Table: "history", Inserted: 1, Via: "trigger orders_history", Triggers: []string{"orders_history"}}}, nil},
		{"replace deletes the row it replaces", "write", "REPLACE INTO refs VALUES (20, 2)", 1,
			[]ipc.TableChange{{Table: "refs", Deleted: 1, Inserted: 1}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := shopDB(t)
			before := digest(t, db)
			resp := execute(previewRequest(db, tt.mode, tt.sql), hclog.NewNullLogger())
			if !resp.OK {
				t.Fatalf("%s: %s", resp.Code, resp.Message)
			}
			p := resp.Preview
			if p == nil {
				t.Fatalf("no preview: %q", resp.Text)
			}
			if p.Changes != tt.changes {
				t.Errorf("changes = %d, want %d", p.Changes, tt.changes)
			}
			if !reflect.DeepEqual(p.Tables, tt.tables) {
				t.Errorf("tables = %+v, want %+v", p.Tables, tt.tables)
			}
			if !reflect.DeepEqual(p.Objects, tt.objects) {
				t.Errorf("objects = %+v, want %+v", p.Objects, tt.objects)
			}
			if digest(t, db) != before {
				t.Error("the dry run changed the database")
			}
		})
	}
}

// TestPreviewVirtualTables: the preupdate hook never sees the rows of a
// virtual table, yet the dry run counts them, or marks the table
// Uncounted when it cannot (SPEC 5.5: the form never understates).
func TestPreviewVirtualTables(t *testing.T) {
	tests := []struct {
		name, sql string
		changes   int64
		tables    []ipc.TableChange
	}{
		{"delete every row of an FTS5 table", "DELETE FROM ft", 3, []ipc.TableChange{{Table: "ft", Deleted: 3}}},
		{"delete from an R*Tree", "DELETE FROM rt", 2, []ipc.TableChange{{Table: "rt", Deleted: 2}}},
		{"delete one R*Tree row", "DELETE FROM rt WHERE id = 1", 1, []ipc.TableChange{{Table: "rt", Deleted: 1}}},
		{"delete nothing", "DELETE FROM ft WHERE rowid = 99", 0, nil},
		{"update an FTS5 table", "UPDATE ft SET body = 'x'", 3, []ipc.TableChange{{Table: "ft", Updated: 3}}},
		{"FTS5 delete-all of a contentless table", "INSERT INTO cl(cl) VALUES('delete-all')", 1, []ipc.TableChange{{Table: "cl", Deleted: 3, Net: true}}},
		{"FTS5 delete-all of an external-content table", "INSERT INTO ext(ext) VALUES('delete-all')", 1, []ipc.TableChange{{Table: "ext", Deleted: 3, Net: true}}},
		{"FTS5 delete command", "INSERT INTO cl(cl, rowid, body) VALUES('delete', 1, 'alpha beta')", 1, []ipc.TableChange{{Table: "cl", Deleted: 1, Net: true}}},
		{"insert into an FTS5 table", "INSERT INTO ft(body) SELECT body FROM notes", 3, []ipc.TableChange{{Table: "ft", Inserted: 3, Net: true}}},
		{"a REPLACE over a row cannot be told apart", "INSERT OR REPLACE INTO ft(rowid, body) VALUES(1, 'z')", 1, []ipc.TableChange{{Table: "ft", Uncounted: true, Net: true}}},
		{"a trigger writing an FTS5 table", "INSERT INTO feed VALUES ('q')", 1,
			[]ipc.TableChange{{Table: "feed", Inserted: 1}, {Table: "cl", Inserted: 1, Via: "trigger feed_index", Triggers: []string{"feed_index"}, Uncounted: true, Net: true}}},
		{"a trigger that does not fire", "DELETE FROM feed", 0, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := vtabDB(t)
			before := digest(t, db)
			resp := execute(previewRequest(db, "destructive", tt.sql), hclog.NewNullLogger())
			if !resp.OK || resp.Preview == nil {
				t.Fatalf("%s: %s %q", resp.Code, resp.Message, resp.Text)
			}
			p := resp.Preview
			if p.Changes != tt.changes {
				t.Errorf("changes = %d, want %d", p.Changes, tt.changes)
			}
			if !reflect.DeepEqual(p.Tables, tt.tables) {
				t.Errorf("tables = %+v, want %+v", p.Tables, tt.tables)
			}
			if digest(t, db) != before {
				t.Error("the dry run changed the database")
			}
		})
	}
	// A virtual table that is not counted is never harmless: write_query
	// under --confirm writes asks instead of committing.
	db := vtabDB(t)
	req := previewRequest(db, "write", "INSERT OR REPLACE INTO ft(rowid, body) VALUES(1, 'z')")
	req.Preview.CommitIfHarmless = true
	if resp := execute(req, hclog.NewNullLogger()); !resp.OK || resp.Preview == nil {
		t.Fatalf("an uncounted write was committed: %+v", resp)
	}
}

// TestRecount: the real run counts again the virtual tables a preview
// counted by their net change, so the answer can say when it differed.
func TestRecount(t *testing.T) {
	db := vtabDB(t)
	req := request(db, ipc.OpQuery, "destructive", "INSERT INTO cl(cl) VALUES('delete-all')")
	req.Recount = []string{"cl", "rt", "nope"}
	resp := execute(req, hclog.NewNullLogger())
	if !resp.OK {
		t.Fatalf("%s: %s", resp.Code, resp.Message)
	}
	if want := map[string]int64{"cl": -3, "rt": 0}; !reflect.DeepEqual(resp.Recounted, want) {
		t.Fatalf("recounted %v, want %v", resp.Recounted, want)
	}
	if resp := execute(request(db, ipc.OpQuery, "destructive", "DELETE FROM rt"), hclog.NewNullLogger()); !resp.OK || resp.Recounted != nil {
		t.Fatalf("a request without Recount: %+v", resp)
	}
}

func TestPreviewSnapshotSize(t *testing.T) {
	db := shopDB(t)
	dir := filepath.Join(t.TempDir(), "snaps")
	req := previewRequest(db, "destructive", "DELETE FROM orders WHERE id = 4")
	req.Snapshot = &ipc.Snapshot{Dir: dir, Stem: "shop", Keep: 3}
	resp := execute(req, hclog.NewNullLogger())
	if !resp.OK || resp.Preview == nil || resp.Preview.Snapshot == nil {
		t.Fatalf("response %+v", resp)
	}
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	var pages, size int64
	_ = eachRow(c, "SELECT page_count, page_size FROM pragma_page_count, pragma_page_size", func(st *rawsqlite.Stmt) {
		pages, size = st.ColumnInt64(0), st.ColumnInt64(1)
	})
	c.Close()
	if got := resp.Preview.Snapshot; got.Kind != ipc.SnapshotFull || got.Bytes != pages*size || got.Bytes == 0 {
		t.Errorf("snapshot plan %+v, want full of %d bytes", got, pages*size)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("the dry run touched the snapshot folder: %v", err)
	}
	// An undo record (--snapshot-mode undo, or auto above --snapshot-full-mb).
	for _, mode := range []struct {
		mode   ipc.SnapshotKind
		fullMB int
		kind   ipc.SnapshotKind
	}{{ipc.SnapshotUndo, 64, ipc.SnapshotUndo}, {ipc.SnapshotAuto, 0, ipc.SnapshotUndo}, {ipc.SnapshotAuto, 64, ipc.SnapshotFull}} {
		req.Snapshot.Mode, req.Snapshot.FullMB = mode.mode, mode.fullMB
		if resp := execute(req, hclog.NewNullLogger()); !resp.OK || resp.Preview.Snapshot == nil || resp.Preview.Snapshot.Kind != mode.kind {
			t.Errorf("mode %s, full_mb %d: %+v, want kind %s", mode.mode, mode.fullMB, resp.Preview, mode.kind)
		}
	}
	req.Snapshot.Mode = ""
	// Snapshots disabled: no plan.
	req.Snapshot.Keep = 0
	if resp := execute(req, hclog.NewNullLogger()); !resp.OK || resp.Preview.Snapshot != nil {
		t.Errorf("snapshots disabled: %+v", resp.Preview)
	}
}

func TestPreviewAnswers(t *testing.T) {
	tests := []struct {
		name      string
		mode      ipc.Mode
		sql       string
		harmless  bool
		code      errcode.Code
		text      string
		committed bool // the database changed
	}{
		{"a read is answered", "destructive", "SELECT count(*) AS n FROM orders", false, "", "n\n4\n# 1 rows", false},
		{"harmless insert is committed", "write", "INSERT INTO history VALUES ('x')", true, "", "ok: 1 rows affected (last_insert_rowid=3)", true},
		{"harmless create table is committed", "write", "CREATE TABLE u (a)", true, "", "ok: schema statement executed", true},
		{"an update is not harmless", "write", "UPDATE orders SET note = 'x' WHERE id = 1", true, "", "ok: dry run rolled back", false},
		{"the statement's error", "destructive", "DELETE FROM nope", false, errcode.SQL, "no such table: nope", false},
		{"constraint failure in the run", "write", "INSERT INTO order_items VALUES (99, 42)", true, errcode.SQL, "FOREIGN KEY constraint failed", false},
		{"the update guard applies", "write", "UPDATE orders SET note = 'x'", true, errcode.Policy, "more than --max-update-rows=2", false},
		{"the policy applies", "write", "DELETE FROM orders", true, errcode.ReadOnly, "use destructive_query", false},
		{"protected tables", "destructive", "DELETE FROM memory_events", false, errcode.Protected, "memory_events", false},
		{"one statement", "destructive", "DELETE FROM orders; DELETE FROM history", false, errcode.MultipleStatements, "one statement", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := shopDB(t)
			before := digest(t, db)
			req := previewRequest(db, tt.mode, tt.sql)
			req.Preview.CommitIfHarmless = tt.harmless
			resp := execute(req, hclog.NewNullLogger())
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got ok=%v %s: %s %q, want %s: %s", resp.OK, resp.Code, resp.Message, resp.Text, tt.code, tt.text)
				}
			} else if !resp.OK || !strings.HasPrefix(resp.Text, tt.text) {
				t.Fatalf("got ok=%v %s: %s %q, want %q", resp.OK, resp.Code, resp.Message, resp.Text, tt.text)
			}
			if changed := digest(t, db) != before; changed != tt.committed {
				t.Errorf("database changed = %v, want %v", changed, tt.committed)
			}
		})
	}
}

func TestPreviewTimeout(t *testing.T) {
	db := shopDB(t)
	req := previewRequest(db, "destructive",
		"DELETE FROM orders WHERE id IN (WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT i FROM r)")
	req.Limits.TimeoutMS = 200
	resp := execute(req, hclog.NewNullLogger())
	if resp.OK || resp.Code != errcode.Timeout {
		t.Fatalf("got ok=%v %s: %s, want TIMEOUT", resp.OK, resp.Code, resp.Message)
	}
}
