package snapshot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// serverDigest is every row of the stand-in server tables and the index's
// shadow tables, and the schema entries on them.
func serverDigest(t testing.TB, c *rawsqlite.Conn) string {
	t.Helper()
	var b strings.Builder
	for _, q := range []string{
		"SELECT id, content, kind FROM memory_events ORDER BY id",
		"SELECT id, tool FROM query_log ORDER BY id",
		"SELECT id, hex(sz) FROM memory_events_fts_docsize ORDER BY id",
		"SELECT id, hex(block) FROM memory_events_fts_data ORDER BY id",
		"SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE tbl_name IN ('memory_events', 'query_log') OR name LIKE 'memory_events%' ORDER BY name",
	} {
		err := c.Each(q, func(st *rawsqlite.Stmt) error {
			for i := range st.ColumnCount() {
				b.WriteString(st.ColumnText(i) + "|")
			}
			b.WriteByte('\n')
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	return b.String()
}

// appendStored checks that a row inserted into memory_events is stored
// (no trigger drops or rewrites it), inside a transaction rolled back.
func appendStored(t testing.TB, c *rawsqlite.Conn) {
	t.Helper()
	if err := c.Exec("BEGIN; INSERT INTO memory_events(id, content, kind) VALUES (99, 'a secret', 'note')"); err != nil {
		t.Fatalf("append: %v", err)
	}
	n, err := scalar(c, "SELECT count(*) FROM memory_events WHERE id = 99 AND content = 'a secret'")
	if e := c.Exec("ROLLBACK"); e != nil {
		t.Fatal(e)
	}
	if err != nil || n != 1 {
		t.Fatalf("an append was not stored (%d, %v)", n, err)
	}
}

// fuzzBase is a database with the stand-in server tables and two honest
// records of it, made once and copied for every input.
type fuzzBase struct{ dir, db, drop, rows string }

func newFuzzBase(t testing.TB) fuzzBase {
	dir := t.TempDir()
	db, err := rawsqlite.Open(filepath.Join(dir, "db.sqlite"), rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Exec(fixture + serverFixture + "; PRAGMA journal_mode=DELETE"); err != nil {
		t.Fatal(err)
	}
	b := fuzzBase{dir: dir, db: filepath.Join(dir, "db.sqlite")}
	// Recorded and undone at once, so that each record applies to the
	// base as it is.
	for _, stmt := range []string{"DROP TABLE child", "DELETE FROM parent WHERE id = 1"} {
		path, _, err := record(t, db, dir, stmt)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Apply(db, path, Options{}); err != nil {
			t.Fatal(err)
		}
		if b.drop == "" {
			b.drop = path
		} else {
			b.rows = path
		}
	}
	return b
}

func copyTo(t testing.TB, src, dst string) {
	t.Helper()
	data, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// recordMutations are what FuzzApply does to a record with its input.
var recordMutations = []string{
	"UPDATE undo_schema SET sql = ?1 WHERE seq = (SELECT max(seq) FROM undo_schema WHERE action = 'create')",
	"UPDATE undo_schema SET type = ?1 WHERE seq = (SELECT min(seq) FROM undo_schema)",
	"UPDATE undo_schema SET name = ?1, tbl_name = ?1",
	"INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('create', 'trigger', 't' || length(?1), 'parent', ?1)",
	"INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('create', 'view', 'v' || length(?1), 'v' || length(?1), ?1)",
	"UPDATE undo_changeset SET data = CAST(?1 AS BLOB)",
	"UPDATE undo_changeset SET data = substr(data, 1, length(?1) % (length(data) + 1)) || CAST(?1 AS BLOB) || substr(data, length(?1) % (length(data) + 1) + length(?1) + 1)",
	"UPDATE undo_info SET statement = ?1, tables = ?1, taken = ?1",
	"UPDATE undo_schema SET columns = ?1 WHERE copy IS NOT NULL",
	"UPDATE undo_schema SET copy = ?1 WHERE copy IS NOT NULL",
}

// FuzzApply mutates honest undo records (their schema rows, changesets,
// undo_info and copies) and applies them: Apply refuses cleanly or
// applies within the rules, and the server's tables, the index's shadow
// tables and the appends to memory_events are never changed. The seeds
// run as an ordinary test.
func FuzzApply(f *testing.F) {
	for _, s := range []struct {
		op    uint8
		which bool
		text  string
	}{
		{0, true, "CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER, note TEXT, data BLOB); DELETE FROM memory_events"},
		{0, true, "CREATE TABLE child AS SELECT * FROM memory_events"},
		{0, true, "CREATE TRIGGER child_pid BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END"},
		{0, true, "CREATE INDEX child_pid ON child(pid) WHERE pid IN (SELECT id FROM memory_events)"},
		{1, true, "table; DELETE FROM memory_events; --"},
		{2, true, "memory_events_fts_docsize"},
		{2, false, "sqlite_master"},
		{3, false, "CREATE TRIGGER t1 AFTER INSERT ON parent BEGIN DELETE FROM memory_events_fts_data; END"},
		{3, false, "CREATE TRIGGER t2 BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END"},
		{4, false, "CREATE VIEW v1 AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"},
		{4, false, "CREATE VIEW v1 AS SELECT * FROM query_log"},
		{5, false, "T\x01\x02garbage"},
		{6, false, "\x00\xff\x10"},
		{6, true, "x"},
		{7, false, "ok\r\n\x1b[2J\u202e"},
		{8, true, "rowid\x1fid\x1fpid"},
		{9, true, "undo_info"},
		{9, true, "undo_copy_1\"; DROP TABLE memory_events; --"},
	} {
		f.Add(s.op, s.which, s.text)
	}
	base := newFuzzBase(f)
	f.Fuzz(func(t *testing.T, op uint8, which bool, text string) {
		// Apply must end within its budget: a hang is a failure the
		// fuzzer keeps (a panic off the test goroutine crashes the run).
		watchdog := time.AfterFunc(30*time.Second, func() {
			panic(fmt.Sprintf("apply did not end within 30 s: op %d, which %v, text %q", op, which, text))
		})
		defer watchdog.Stop()
		dir := t.TempDir()
		db, rec := filepath.Join(dir, "db.sqlite"), filepath.Join(dir, "rec.undo.db")
		copyTo(t, base.db, db)
		src := base.rows
		if which {
			src = base.drop
		}
		copyTo(t, src, rec)
		mutation := recordMutations[int(op)%len(recordMutations)]
		c, err := rawsqlite.Open(rec, rawsqlite.ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		err = execArgs(c, mutation, text)
		c.Close()
		if err != nil {
			t.Skip("the mutation does not apply:", err)
		}
		conn, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		before := serverDigest(t, conn)
		agent := digest(t, conn)
		_, err = Apply(conn, rec, Options{Force: true, Timeout: 5 * time.Second, MaxGrowth: 8 << 20})
		if err != nil {
			var h *HostileError
			var ce *ConflictError
			var be *BudgetError
			if !errors.As(err, &h) && !errors.As(err, &ce) && !errors.As(err, &be) {
				t.Fatalf("apply = %v (%T), want a refusal that names the record", err, err)
			}
			if strings.Contains(err.Error(), "database disk image is malformed") {
				t.Fatalf("the refusal blames the database: %v", err)
			}
			if digest(t, conn) != agent {
				t.Fatalf("a refused record changed the database (%v)", err)
			}
		}
		if got := serverDigest(t, conn); got != before {
			t.Fatalf("the server's tables changed (apply: %v):\n%s\nwant:\n%s", err, got, before)
		}
		appendStored(t, conn)
	})
}

// FuzzCheckSnapshot gives CheckSnapshot one object of a snapshot: when
// it accepts it, creating it beside the stand-in server tables and
// writing to every agent table and reading every view changes none of
// the server's rows.
func FuzzCheckSnapshot(f *testing.F) {
	for _, s := range []struct{ typ, name, table, sql string }{
		{"table", "notes", "notes", "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT DEFAULT 'x')"},
		{"table", "notes", "notes", "CREATE TABLE notes(a); DELETE FROM memory_events"},
		{"table", "ft", "ft", "CREATE VIRTUAL TABLE ft USING fts5(body)"},
		{"table", "box", "box", "CREATE VIRTUAL TABLE box USING rtree(id, x0, x1)"},
		{"table", "ev", "ev", "CREATE VIRTUAL TABLE ev USING fts5(content, content='memory_events', content_rowid='id')"},
		{"trigger", "parent_t", "parent", "CREATE TRIGGER parent_t AFTER INSERT ON parent BEGIN UPDATE memory_events SET content = 'x'; END"},
		{"trigger", "parent_t", "parent", "CREATE TRIGGER parent_t AFTER INSERT ON parent BEGIN INSERT INTO child(pid) VALUES (new.id); END"},
		{"trigger", "mt", "memory_events", "CREATE TRIGGER mt BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END"},
		{"view", "v", "v", "CREATE VIEW v AS SELECT * FROM parent"},
		{"view", "v", "v", "CREATE VIEW v AS SELECT * FROM memory_events_fts_data"},
		{"view", "v", "v", "CREATE VIEW v AS SELECT rowid, content FROM memory_events_fts WHERE memory_events_fts MATCH 'secret'"},
		{"trigger", "parent_t", "parent", "CREATE TRIGGER parent_t AFTER INSERT ON parent BEGIN INSERT INTO child(pid) SELECT id FROM memory_events; END"},
		{"index", "i", "parent", "CREATE INDEX i ON parent(name)"},
		{"index", "i", "parent", "CREATE INDEX i ON memory_events(content)"},
	} {
		f.Add(s.typ, s.name, s.table, s.sql)
	}
	f.Fuzz(func(t *testing.T, typ, name, table, sqlText string) {
		objs := []Object{
			{Type: "table", Name: "parent", Table: "parent", SQL: "CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT)"},
			{Type: "table", Name: "child", Table: "child", SQL: "CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER)"},
			{Type: typ, Name: name, Table: table, SQL: sqlText},
		}
		err := CheckSnapshot(objs)
		if err != nil {
			var h *HostileError
			if !errors.As(err, &h) || !strings.Contains(err.Error(), "the snapshot is malformed or hostile") {
				t.Fatalf("CheckSnapshot = %v (%T)", err, err)
			}
			return
		}
		c, err := rawsqlite.Open(filepath.Join(t.TempDir(), "db.sqlite"), rawsqlite.ReadWrite|rawsqlite.Create)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		if err := c.Exec(strings.TrimPrefix(serverFixture, ";")); err != nil {
			t.Fatal(err)
		}
		before := serverDigest(t, c)
		for _, o := range []string{"table", "index", "view", "trigger"} {
			for _, ob := range objs {
				if ob.Type != o {
					continue
				}
				// Each refuses SQL that holds more than one statement.
				if err := c.Each(ob.SQL, nil); err != nil {
					t.Fatalf("an accepted object does not run alone: %v", err)
				}
			}
		}
		var targets []string
		if err := c.Each("SELECT name, type FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'memory%' AND name NOT LIKE 'query%' AND name NOT LIKE 'sqlite%'", func(st *rawsqlite.Stmt) error {
			targets = append(targets, st.ColumnText(1)+" "+st.ColumnText(0))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for _, tv := range targets {
			typ, name, _ := strings.Cut(tv, " ")
			// Whatever the agent's tables and views do when written or read.
			stmts := []string{"SELECT * FROM " + rawsqlite.QuoteIdent(name) + " LIMIT 10"}
			if typ == "table" {
				stmts = append(stmts, "INSERT INTO "+rawsqlite.QuoteIdent(name)+" DEFAULT VALUES", "DELETE FROM "+rawsqlite.QuoteIdent(name))
			}
			for _, s := range stmts {
				_ = c.Exec(s)
			}
		}
		if got := serverDigest(t, c); got != before {
			t.Fatalf("an accepted snapshot object changed the server's rows:\n%s\nwant:\n%s", got, before)
		}
		appendStored(t, c)
	})
}
