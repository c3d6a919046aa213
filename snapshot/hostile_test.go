package snapshot

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// serverFixture stands in for the server's tables in a unit test: the
// names are what the guard refuses, the full-text index has its real
// shadow tables.
const serverFixture = `;
CREATE TABLE memory_events(id INTEGER PRIMARY KEY, ts TEXT, session TEXT, kind TEXT, content TEXT, prev_hash TEXT, hash TEXT);
CREATE TABLE query_log(id INTEGER PRIMARY KEY, tool TEXT);
CREATE VIRTUAL TABLE memory_events_fts USING fts5(content, kind, content='memory_events', content_rowid='id');
INSERT INTO memory_events(id, content, kind) VALUES (1, 'one', 'note'), (2, 'two secret', 'note'), (3, 'three', 'note'), (4, 'four', 'note');
INSERT INTO memory_events_fts(memory_events_fts) VALUES ('rebuild');
INSERT INTO query_log(tool) VALUES ('a'), ('b')`

// mutate changes the record at path with sqlText, run directly on it.
func mutate(t testing.TB, path, sqlText string) {
	t.Helper()
	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(sqlText); err != nil {
		t.Fatalf("mutate %s: %v", sqlText, err)
	}
}

// docsizeDelete is a changeset that deletes row 1 of the index's
// memory_events_fts_docsize, made on a lookalike table.
func docsizeDelete(t testing.TB) []byte {
	t.Helper()
	c, err := rawsqlite.Open(filepath.Join(t.TempDir(), "scratch.db"), rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec("CREATE TABLE memory_events_fts_docsize(id INTEGER PRIMARY KEY, sz BLOB); INSERT INTO memory_events_fts_docsize VALUES (1, x'01')"); err != nil {
		t.Fatal(err)
	}
	s, err := c.NewSession(func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Delete()
	if err := c.Exec("DELETE FROM memory_events_fts_docsize"); err != nil {
		t.Fatal(err)
	}
	cs, err := s.Changeset()
	if err != nil || len(cs) == 0 {
		t.Fatalf("changeset %d bytes, %v", len(cs), err)
	}
	return cs
}

// TestHostileRecords: records changed as a hostile program would change
// them are refused as the record's fault, and change nothing: neither the
// agent's tables nor the server's.
func TestHostileRecords(t *testing.T) {
	for _, tt := range []struct {
		name, stmt, mutation, want string
		setup                      string // run on the database first
		changeset                  func(testing.TB) []byte
	}{
		{name: "the issue's extra statements", stmt: "DROP TABLE child",
			mutation: `UPDATE undo_schema SET sql = 'CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER, note TEXT, data BLOB); DELETE FROM memory_events WHERE id>3; DELETE FROM query_log WHERE 1' WHERE type = 'table' AND action = 'create'`,
			want:     "holds more than one statement"},
		{name: "a trigger on memory_events declared under child", stmt: "DROP INDEX child_pid",
			mutation: `UPDATE undo_schema SET type = 'trigger', sql = 'CREATE TRIGGER child_pid BEFORE INSERT ON memory_events WHEN new.content LIKE ''%secret%'' BEGIN SELECT RAISE(IGNORE); END' WHERE action = 'create'`,
			want:     "memory_events"},
		{name: "a trigger on child writing memory_events", stmt: "DROP TRIGGER parent_gone",
			mutation: `UPDATE undo_schema SET sql = 'CREATE TRIGGER parent_gone AFTER DELETE ON parent BEGIN INSERT OR REPLACE INTO memory_events(id, content) VALUES (1, ''rewritten''); END' WHERE action = 'create'`,
			want:     "reaches memory_events, which belongs to the server or to SQLite (in trigger or view parent_gone)"},
		{name: "a trigger reading the audit log", stmt: "DROP TRIGGER parent_gone",
			mutation: `UPDATE undo_schema SET sql = 'CREATE TRIGGER parent_gone AFTER DELETE ON parent BEGIN INSERT INTO audit(what) SELECT tool FROM query_log; END' WHERE action = 'create'`,
			want:     "reaches query_log"},
		{name: "a view over sqlite_dbpage", stmt: "DROP VIEW names",
			mutation: `UPDATE undo_schema SET sql = 'CREATE VIEW names AS SELECT data AS name FROM sqlite_dbpage' WHERE action = 'create'`,
			want:     "sqlite_dbpage"},
		{name: "an index declared on child made on the index", stmt: "DROP INDEX child_pid",
			mutation: `UPDATE undo_schema SET sql = 'CREATE INDEX child_pid ON memory_events(content)' WHERE action = 'create'`,
			want:     "memory_events"},
		{name: "an index declared as another name", stmt: "DROP INDEX child_pid",
			mutation: `UPDATE undo_schema SET sql = 'CREATE INDEX other ON child(note)' WHERE action = 'create'`,
			want:     "creates something else"},
		{name: "a table made by a query", stmt: "DROP TABLE child",
			mutation: `UPDATE undo_schema SET sql = 'CREATE TABLE child AS SELECT * FROM memory_events' WHERE type = 'table' AND action = 'create'`,
			want:     "memory_events"},
		{name: "a foreign key to the memory", stmt: "DROP TABLE child",
			mutation: `UPDATE undo_schema SET sql = 'CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES memory_events(id) ON DELETE CASCADE, note TEXT, data BLOB)' WHERE type = 'table' AND action = 'create'`,
			want:     "foreign key to memory_events"},
		{name: "SQL in the type", stmt: "DROP INDEX child_pid",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name) VALUES ('drop', 'TABLE memory_events; --', 'x', 'x')`,
			want:     "type TABLE memory_events; --"},
		{name: "a drop of the memory", stmt: "DROP INDEX child_pid",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('drop', 'table', 'Memory_Events', 'memory_events', 'x')`,
			want:     "Memory_Events"},
		{name: "a drop of the index's shadow table", stmt: "DROP INDEX child_pid",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('drop', 'table', 'memory_events_fts_data', 'memory_events_fts_data', 'x')`,
			want:     "memory_events_fts_data"},
		{name: "a drop of a trigger on the memory, declared on child", stmt: "DROP INDEX child_pid",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name, sql) SELECT 'drop', 'trigger', 'mem_guard', 'child', 'CREATE TRIGGER mem_guard BEFORE DELETE ON memory_events BEGIN SELECT RAISE(ABORT, ''append-only''); END'`,
			setup:    "CREATE TRIGGER mem_guard BEFORE DELETE ON memory_events BEGIN SELECT RAISE(ABORT, 'append-only'); END",
			want:     "reaches memory_events"},
		{name: "a copy that is an endless view", stmt: "DROP TABLE child",
			mutation: `DROP TABLE undo_copy_1; CREATE VIEW undo_copy_1 AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i AS rowid, i AS id, i AS pid, zeroblob(1000) AS note, NULL AS data FROM n`,
			want:     "is not a table of the record"},
		{name: "a changeset on the index's shadow table", stmt: "DELETE FROM child WHERE id = 10", changeset: docsizeDelete,
			want: "memory_events_fts_docsize"},
		{name: "a changeset that is noise", stmt: "DELETE FROM child WHERE id = 10",
			mutation: `UPDATE undo_changeset SET data = x'54ff0203616263'`,
			want:     "changeset"},
		{name: "undo_info a view", stmt: "DELETE FROM child WHERE id = 10",
			mutation: `ALTER TABLE undo_changeset RENAME TO c2; CREATE VIEW undo_changeset AS SELECT * FROM c2`,
			want:     "undo_changeset is missing or is not a table"},
		{name: "a virtual table", stmt: "DROP INDEX child_pid",
			mutation: `UPDATE undo_schema SET type = 'table', name = 'vt', tbl_name = 'vt', sql = 'CREATE VIRTUAL TABLE vt USING fts5(x)' WHERE action = 'create'`,
			want:     "virtual table"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			extra := serverFixture
			if tt.setup != "" {
				extra += "; " + tt.setup
			}
			db, dir := openFixture(t, extra)
			path, _, err := record(t, db, dir, tt.stmt)
			if err != nil {
				t.Fatal(err)
			}
			if tt.mutation != "" {
				mutate(t, path, tt.mutation)
			}
			if tt.changeset != nil {
				c, err := rawsqlite.Open(path, rawsqlite.ReadWrite)
				if err != nil {
					t.Fatal(err)
				}
				if err := execArgs(c, "UPDATE undo_changeset SET data = ?1", tt.changeset(t)); err != nil {
					t.Fatal(err)
				}
				c.Close()
			}
			before := digest(t, db)
			_, err = Apply(db, path, Options{Force: true})
			var h *HostileError
			if !errors.As(err, &h) || !strings.Contains(err.Error(), tt.want) || !strings.HasSuffix(err.Error(), "your database was not changed") {
				t.Fatalf("apply = %v, want the record refused naming %q", err, tt.want)
			}
			if got := digest(t, db); got != before {
				t.Fatalf("a refused record changed the database:\n%s\nwant:\n%s", got, before)
			}
			if err := db.Exec("INSERT INTO memory_events(id, content, kind) VALUES (5, 'another secret', 'note')"); err != nil {
				t.Fatal(err)
			}
			if n, _ := scalar(db, "SELECT count(*) FROM memory_events"); n != 5 {
				t.Fatalf("memory_events has %d rows after an append, want 5", n)
			}
		})
	}
}

// TestRecordBudgets: a record that puts back more than the growth bound
// allows, or runs over the time bound, is rolled back and changes nothing.
func TestRecordBudgets(t *testing.T) {
	db, dir := openFixture(t, "; CREATE TABLE big(id INTEGER PRIMARY KEY, b BLOB); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO big SELECT i, randomblob(2000) FROM n")
	path, _, err := record(t, db, dir, "DROP TABLE big")
	if err != nil {
		t.Fatal(err)
	}
	// Without its free pages the file must grow to take the rows back.
	if err := db.Exec("VACUUM"); err != nil {
		t.Fatal(err)
	}
	before := digest(t, db)
	var be *BudgetError
	_, err = Apply(db, path, Options{MaxGrowth: 1 << 20})
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "more than 1 MiB") {
		t.Fatalf("apply with a 1 MiB growth bound = %v", err)
	}
	if digest(t, db) != before {
		t.Fatal("a restore over its growth bound changed the database")
	}
	_, err = Apply(db, path, Options{Timeout: time.Nanosecond})
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("apply with a 1 ns budget = %v", err)
	}
	if digest(t, db) != before {
		t.Fatal("a restore over its time budget changed the database")
	}
	if _, err := Apply(db, path, Options{Timeout: time.Minute, MaxGrowth: 64 << 20}); err != nil {
		t.Fatalf("apply within the bounds: %v", err)
	}
}

// TestPrintable: what restore prints from a record cannot fake lines or
// reorder text.
func TestPrintable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain text, ünïcode", "plain text, ünïcode"},
		{"a\nok: restored\r\x1b[2J", `a\x0aok: restored\x0d\x1b[2J`},
		{"x\u202egnp.exe", `x\u{202e}gnp.exe`},
		{"zero\u200bwidth\ufeff", `zero\u{200b}width\u{feff}`},
		{"c1 \u0085 del \x7f", `c1 \u{0085} del \x7f`},
		{"back\\slash", `back\\slash`},
		{"bad \xff utf8", `bad \xff utf8`},
	} {
		if got := Printable(tt.in); got != tt.want {
			t.Errorf("Printable(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestViewsMayReadTheMemory: a view that reads the server's tables or the
// index is restored (a view cannot write; the server's start check allows
// it too), and works.
func TestViewsMayReadTheMemory(t *testing.T) {
	for _, sql := range []string{
		"CREATE VIEW names AS SELECT tool AS name FROM query_log",
		"CREATE VIEW names AS SELECT content AS name FROM memory_events_fts WHERE memory_events_fts MATCH 'secret'",
		"CREATE VIEW names AS SELECT e.content AS name FROM memory_events e JOIN parent p ON p.id = e.id",
	} {
		db, dir := openFixture(t, serverFixture)
		path, _, err := record(t, db, dir, "DROP VIEW names")
		if err != nil {
			t.Fatal(err)
		}
		mutate(t, path, "UPDATE undo_schema SET sql = '"+strings.ReplaceAll(sql, "'", "''")+"' WHERE action = 'create'")
		before := serverDigest(t, db)
		if _, err := Apply(db, path, Options{}); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		if n, err := scalar(db, "SELECT count(*) FROM names"); err != nil || n == 0 {
			t.Fatalf("%s: %d rows, %v", sql, n, err)
		}
		if serverDigest(t, db) != before {
			t.Fatalf("%s: the server's tables changed", sql)
		}
	}
}

// TestCheckSnapshotViews: a snapshot's view may read the memory and its
// index; a trigger body may not.
func TestCheckSnapshotViews(t *testing.T) {
	base := []Object{{Type: "table", Name: "notes", Table: "notes", SQL: "CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)"}}
	for _, tt := range []struct {
		o    Object
		want string // "" when accepted
	}{
		{Object{Type: "view", Name: "recent", Table: "recent", SQL: "CREATE VIEW recent AS SELECT id, content FROM memory_events ORDER BY id DESC LIMIT 5"}, ""},
		{Object{Type: "view", Name: "found", Table: "found", SQL: "CREATE VIEW found AS SELECT rowid, snippet(memory_events_fts, 0, '[', ']', '...', 8) FROM memory_events_fts WHERE memory_events_fts MATCH 'x'"}, ""},
		{Object{Type: "trigger", Name: "notes_t", Table: "notes", SQL: "CREATE TRIGGER notes_t AFTER INSERT ON notes BEGIN UPDATE notes SET body = (SELECT content FROM memory_events LIMIT 1); END"}, "the triggers on notes: it reaches memory_events"},
	} {
		err := CheckSnapshot(append(append([]Object{}, base...), tt.o))
		switch {
		case tt.want == "" && err != nil:
			t.Errorf("%s: %v", tt.o.Name, err)
		case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
			t.Errorf("%s: %v, want %q", tt.o.Name, err, tt.want)
		}
	}
}
