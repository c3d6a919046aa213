package snapshot

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

const fixture = `PRAGMA journal_mode=WAL;
CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT NOT NULL);
CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE, note TEXT, data BLOB);
CREATE INDEX child_pid ON child(pid);
CREATE TABLE nokey(a, b);
CREATE TABLE wr(k TEXT PRIMARY KEY, v REAL, n) WITHOUT ROWID;
CREATE TABLE audit(id INTEGER PRIMARY KEY AUTOINCREMENT, what TEXT);
CREATE TRIGGER parent_gone AFTER DELETE ON parent BEGIN INSERT INTO audit(what) VALUES ('deleted ' || old.name); END;
CREATE VIEW names AS SELECT name FROM parent;
CREATE TABLE gen(a INTEGER, b INTEGER GENERATED ALWAYS AS (a * 2) STORED, c TEXT);
INSERT INTO parent VALUES (1, 'one'), (2, 'two'), (3, 'three');
INSERT INTO child VALUES (10, 1, 'a', x'00ff00'), (11, 1, NULL, NULL), (12, 2, '', x''), (13, 3, 'c', randomblob(3000));
INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (NULL, 2.5), (x'01', NULL);
INSERT INTO wr VALUES ('x', 1.5, NULL), ('y', NULL, 'n'), ('z', -0.0, 7);
INSERT INTO gen(a, c) VALUES (1, 'p'), (2, NULL);
INSERT INTO audit(what) VALUES ('start'), ('gone'); DELETE FROM audit WHERE what = 'gone';
CREATE TABLE vgen(a INTEGER, b INTEGER GENERATED ALWAYS AS (a + 1) VIRTUAL);
INSERT INTO vgen(a) VALUES (1), (2);
CREATE TABLE odd(rowid TEXT, oid TEXT);
INSERT INTO odd VALUES ('r', 'o'), ('r', NULL);`

// digest is every agent object's definition and every row of every table,
// with each value's storage class and exact bytes.
func digest(t *testing.T, c *rawsqlite.Conn) string {
	t.Helper()
	var b strings.Builder
	var tables []string
	err := c.Each("SELECT type, name, sql FROM sqlite_schema WHERE name NOT LIKE 'sqlite\\_%' ESCAPE '\\' ORDER BY type, name", func(st *rawsqlite.Stmt) error {
		fmt.Fprintf(&b, "%s %s %s\n", st.ColumnText(0), st.ColumnText(1), st.ColumnText(2))
		if st.ColumnText(0) == "table" && !isVirtual(st.ColumnText(2)) {
			tables = append(tables, st.ColumnText(1))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, tbl := range tables {
		if strings.Contains(tbl, "_") && strings.HasPrefix(tbl, "ft_") {
			continue // FTS5 shadow tables: their pages, not the agent's rows
		}
		rows := sqlitetest.ConnRows(t, c, "SELECT * FROM "+rawsqlite.QuoteIdent(tbl))
		sortStrings(rows)
		fmt.Fprintf(&b, "%s: %s\n", tbl, strings.Join(rows, " / "))
	}
	return b.String()
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// sequences reads the AUTOINCREMENT counters.
func sequences(t *testing.T, c *rawsqlite.Conn) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	if err := c.Each("SELECT name, seq FROM sqlite_sequence", func(st *rawsqlite.Stmt) error {
		out[st.ColumnText(0)] = st.ColumnInt64(1)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// record runs stmt on db as the worker does: the plan from the
// authorizer, the record begun in the write transaction, the statement,
// the record finished before the commit.
func record(t testing.TB, db *rawsqlite.Conn, dir, stmt string) (string, Summary, error) {
	t.Helper()
	var actions []rawsqlite.AuthRequest
	compiling := true
	if err := db.SetAuthorizer(func(r rawsqlite.AuthRequest) int {
		if compiling {
			actions = append(actions, r)
		}
		return rawsqlite.AuthOK
	}); err != nil {
		t.Fatal(err)
	}
	// The authorizer stays, as in the worker: removing it would expire
	// the statement and hide a statement compiled before the session.
	defer db.SetAuthorizer(nil)
	st, _, err := db.Prepare(stmt)
	compiling = false
	if err != nil {
		t.Fatalf("prepare %q: %v", stmt, err)
	}
	defer st.Finalize()
	path := filepath.Join(dir, fmt.Sprintf("rec%d.undo.db", len(actions)^int(sha256.Sum256([]byte(stmt))[0])))
	if err := db.Exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	r, err := Begin(db, path, PlanFrom(actions))
	if err != nil {
		db.Exec("ROLLBACK")
		return "", Summary{}, err
	}
	for {
		row, err := st.Step()
		if err != nil {
			r.Abort()
			t.Fatalf("step %q: %v", stmt, err)
		}
		if !row {
			break
		}
	}
	sum, err := r.Finish(Info{Taken: "2026-12-01T00:00:00Z", Statement: stmt, Reason: "test"})
	if err != nil {
		r.Abort()
		db.Exec("ROLLBACK")
		return "", sum, err
	}
	if err := db.Exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
	return path, sum, nil
}

func openFixture(t *testing.T, extra string) (*rawsqlite.Conn, string) {
	t.Helper()
	dir := t.TempDir()
	db, err := rawsqlite.Open(filepath.Join(dir, "db.sqlite"), rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	if err := db.Exec(fixture + extra + "; PRAGMA foreign_keys=ON"); err != nil {
		t.Fatal(err)
	}
	return db, dir
}

// TestRoundTrip: each statement is recorded, run and undone; every agent
// table ends in the same rows and every object in the same definition.
func TestRoundTrip(t *testing.T) {
	for _, tt := range []struct{ name, stmt string }{
		{"delete with where", "DELETE FROM child WHERE id IN (10, 12)"},
		{"unfiltered update", "UPDATE child SET note = 'x', data = NULL"},
		// Compiled before the session began, this would clear the table
		// without reporting its rows.
		{"unfiltered delete", "DELETE FROM nokey"},
		{"cascade", "DELETE FROM parent WHERE id = 1"},
		{"trigger writes another table", "DELETE FROM parent WHERE id = 3"},
		{"drop table", "DROP TABLE child"},
		{"drop parent table", "DROP TABLE parent"},
		{"drop index", "DROP INDEX child_pid"},
		{"drop view", "DROP VIEW names"},
		{"drop trigger", "DROP TRIGGER parent_gone"},
		{"create trigger", "CREATE TRIGGER t2 AFTER UPDATE ON wr BEGIN SELECT 1; END"},
		{"rename table", "ALTER TABLE wr RENAME TO wr2"},
		{"rename column", "ALTER TABLE child RENAME COLUMN note TO remark"},
		{"add column", "ALTER TABLE child ADD COLUMN extra TEXT DEFAULT 'd'"},
		{"drop column", "ALTER TABLE child DROP COLUMN note"},
		{"without rowid", "DELETE FROM wr WHERE k <> 'y'"},
		{"no declared key", "DELETE FROM nokey WHERE a = 1"},
		{"no declared key update", "UPDATE nokey SET b = x'ff'"},
		{"generated column", "UPDATE gen SET a = a + 10"},
		{"drop table with generated column", "DROP TABLE gen"},
		{"drop autoincrement table", "DROP TABLE audit"},
		{"replace deletes a row", "REPLACE INTO parent VALUES (2, 'deux')"},
		{"update changes keys", "UPDATE child SET id = id + 100"},
		{"update changes a without rowid key", "UPDATE wr SET k = k || k"},
		{"virtual generated column", "UPDATE vgen SET a = a * 3"},
		{"rowid column names taken", "DROP TABLE odd"},
		{"blobs and nulls", "UPDATE child SET data = CASE WHEN data IS NULL THEN x'' ELSE NULL END"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, dir := openFixture(t, "")
			before := digest(t, db)
			seqs := sequences(t, db)
			path, sum, err := record(t, db, dir, tt.stmt)
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			if digest(t, db) == before {
				t.Fatal("the statement changed nothing")
			}
			if sum.Bytes <= 0 || len(sum.Tables) == 0 {
				t.Errorf("summary %+v", sum)
			}
			res, err := Apply(db, path, Options{})
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if got := digest(t, db); got != before {
				t.Fatalf("after the undo:\n%s\nwant:\n%s", got, before)
			}
			// AUTOINCREMENT counters never go back, also through a DROP.
			for name, seq := range seqs {
				if now, ok := sequences(t, db)[name]; !ok || now < seq {
					t.Errorf("sqlite_sequence %s: %d (%v), before %d", name, now, ok, seq)
				}
			}
			if res.Statement != tt.stmt {
				t.Errorf("record statement %q", res.Statement)
			}
			// Applying it again finds everything as it would put it.
			if _, err := Apply(db, path, Options{}); err != nil {
				t.Fatalf("second apply: %v", err)
			}
			if got := digest(t, db); got != before {
				t.Fatalf("after a second undo:\n%s", got)
			}
		})
	}
}

// TestSafetyRecord: an apply with Options.Safety keeps the state it
// replaces as an undo record of its own changes, kept before it commits;
// applying that record undoes the restore. A record that recreates
// objects asks for a full copy instead and changes nothing.
func TestSafetyRecord(t *testing.T) {
	for _, tt := range []struct {
		name, stmt string
		full       bool
	}{
		{"delete with where", "DELETE FROM child WHERE id IN (10, 12)", false},
		{"cascade and trigger", "DELETE FROM parent WHERE id = 1", false},
		{"unfiltered update", "UPDATE child SET note = 'x', data = NULL", false},
		{"without rowid", "UPDATE wr SET k = k || k", false},
		{"no declared key", "UPDATE nokey SET b = x'ff'", false},
		{"drop table", "DROP TABLE child", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, dir := openFixture(t, "")
			before := digest(t, db)
			path, _, err := record(t, db, dir, tt.stmt)
			if err != nil {
				t.Fatalf("record: %v", err)
			}
			after := digest(t, db)
			var kept []string
			safety := &Safety{
				Partial: filepath.Join(dir, "safety.partial"), Taken: "2026-12-02T00:00:00Z", Statement: "restore " + path,
				Keep: func(p string) (string, error) {
					name := filepath.Join(dir, "safety.undo.db")
					kept = append(kept, name)
					return name, os.Rename(p, name)
				},
			}
			res, err := Apply(db, path, Options{Safety: safety})
			var full *FullCopyNeeded
			if tt.full {
				if !errors.As(err, &full) || len(kept) > 0 || digest(t, db) != after {
					t.Fatalf("apply = %v (kept %v); want FullCopyNeeded and nothing changed", err, kept)
				}
				if _, err := os.Stat(safety.Partial); !errors.Is(err, os.ErrNotExist) {
					t.Fatalf("the partial safety record was left: %v", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("apply: %v", err)
			}
			if digest(t, db) != before {
				t.Fatal("the apply did not restore the state before the statement")
			}
			if len(kept) != 1 || res.Safety != kept[0] || !IsRecord(res.Safety) {
				t.Fatalf("safety %q, kept %v", res.Safety, kept)
			}
			info, err := ReadRecord(res.Safety)
			if err != nil || info.Statement != "restore "+path || info.Rows == 0 {
				t.Fatalf("safety record info %+v, %v", info, err)
			}
			if _, err := Apply(db, res.Safety, Options{}); err != nil {
				t.Fatalf("apply the safety record: %v", err)
			}
			if got := digest(t, db); got != after {
				t.Fatalf("the safety record did not undo the restore:\n%s\nwant:\n%s", got, after)
			}
		})
	}
}

// TestTwoRecordsNewestFirst: two statements in a row, undone newest first.
func TestTwoRecordsNewestFirst(t *testing.T) {
	db, dir := openFixture(t, "")
	before := digest(t, db)
	first, _, err := record(t, db, dir, "UPDATE child SET note = 'first'")
	if err != nil {
		t.Fatal(err)
	}
	middle := digest(t, db)
	second, _, err := record(t, db, dir, "DELETE FROM child WHERE id > 10")
	if err != nil {
		t.Fatal(err)
	}
	// Oldest first is refused: the rows it would put back changed since.
	var ce *ConflictError
	if _, err := Apply(db, first, Options{}); !errors.As(err, &ce) {
		t.Fatalf("oldest first = %v, want a conflict", err)
	}
	if _, err := Apply(db, second, Options{}); err != nil {
		t.Fatal(err)
	}
	if digest(t, db) != middle {
		t.Fatal("the newer record did not restore the state between them")
	}
	if _, err := Apply(db, first, Options{}); err != nil {
		t.Fatal(err)
	}
	if digest(t, db) != before {
		t.Fatal("the two records did not restore the first state")
	}
}

// TestConflict: a row changed after the statement makes the undo refuse,
// naming it, with nothing changed; --force overwrites it.
func TestConflict(t *testing.T) {
	db, dir := openFixture(t, "")
	before := digest(t, db)
	path, _, err := record(t, db, dir, "DELETE FROM child WHERE id >= 11")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Exec("INSERT INTO child VALUES (12, 2, 'new', NULL); UPDATE parent SET name = 'uno' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	changed := digest(t, db)
	_, err = Apply(db, path, Options{})
	var ce *ConflictError
	if !errors.As(err, &ce) || len(ce.Conflicts) != 1 {
		t.Fatalf("apply = %v, want one conflict", err)
	}
	want := "child (id=12): a row with this key exists again: note is 'new', the record has ''; data is NULL, the record has <blob 0 bytes>"
	if got := ce.Conflicts[0].String(); got != want {
		t.Fatalf("conflict\n got %s\nwant %s", got, want)
	}
	if !strings.Contains(err.Error(), "--force") {
		t.Errorf("the refusal does not say how to go on: %v", err)
	}
	if digest(t, db) != changed {
		t.Fatal("a refused undo changed rows")
	}
	res, err := Apply(db, path, Options{Force: true})
	if err != nil || len(res.Overwritten) != 1 {
		t.Fatalf("forced apply = %+v, %v", res, err)
	}
	if err := db.Exec("UPDATE parent SET name = 'one' WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if digest(t, db) != before {
		t.Fatal("a forced undo did not put the rows back")
	}
}

// TestFullCopyNeeded: statements the session extension cannot capture are
// refused before anything is written (or when the record finds out), so
// the caller takes a full copy.
func TestFullCopyNeeded(t *testing.T) {
	for _, tt := range []struct{ name, extra, stmt, reason string }{
		{"fts5 delete", "; CREATE VIRTUAL TABLE ft USING fts5(body); INSERT INTO ft VALUES ('hello')", "DELETE FROM ft", "virtual table ft"},
		{"fts5 command", "; CREATE VIRTUAL TABLE ft USING fts5(body); INSERT INTO ft VALUES ('hello')", "INSERT INTO ft(ft) VALUES ('delete-all')", "virtual table ft"},
		{"drop fts5", "; CREATE VIRTUAL TABLE ft USING fts5(body)", "DROP TABLE ft", "virtual table ft"},
		{"null key", "; CREATE TABLE nk(k TEXT PRIMARY KEY, v); INSERT INTO nk VALUES (NULL, 1), ('a', 2)", "DELETE FROM nk", "PRIMARY KEY is NULL"},
		{"rename a parent", "", "ALTER TABLE parent RENAME TO mother", "definition of table child"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			db, dir := openFixture(t, tt.extra)
			before := digest(t, db)
			_, _, err := record(t, db, dir, tt.stmt)
			var fc *FullCopyNeeded
			if !errors.As(err, &fc) || !strings.Contains(fc.Reason, tt.reason) {
				t.Fatalf("record = %v, want a full copy because of %q", err, tt.reason)
			}
			if digest(t, db) != before {
				t.Fatal("the statement was kept")
			}
			if m, _ := filepath.Glob(filepath.Join(dir, "*.undo.db*")); len(m) != 0 {
				t.Fatalf("left %v", m)
			}
		})
	}
}

// TestIsRecord tells an undo record from a database, also one with tables
// of the record's names.
func TestIsRecord(t *testing.T) {
	db, dir := openFixture(t, "")
	path, _, err := record(t, db, dir, "DELETE FROM child")
	if err != nil {
		t.Fatal(err)
	}
	lookalike := filepath.Join(dir, "lookalike.db")
	c, err := rawsqlite.Open(lookalike, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec("CREATE TABLE undo_info(kind); CREATE TABLE undo_changeset(x); CREATE TABLE undo_schema(x); CREATE TABLE undo_rows(x)"); err != nil {
		t.Fatal(err)
	}
	c.Close()
	for _, tt := range []struct {
		path string
		want bool
	}{{path, true}, {filepath.Join(dir, "db.sqlite"), false}, {lookalike, false}, {filepath.Join(dir, "missing"), false}} {
		if got := IsRecord(tt.path); got != tt.want {
			t.Errorf("IsRecord(%s) = %v", filepath.Base(tt.path), got)
		}
	}
}

// TestApplyNamesWhatTheRecordHolds: Apply, dry or not, reports every
// object the record drops or creates (a step planted in the record too)
// and the changeset's rows by table, from what it found in the record,
// not from what undo_info says.
func TestApplyNamesWhatTheRecordHolds(t *testing.T) {
	for _, tt := range []struct {
		name, stmt, mutation string
		steps                []string // ObjectStep.String, with the action first
		changes              []TableChanges
		rows                 int64
	}{
		{name: "rows only", stmt: "DELETE FROM child WHERE id IN (10, 12)",
			changes: []TableChanges{{"child", 2}}, rows: 2},
		{name: "cascade and trigger", stmt: "DELETE FROM parent WHERE id = 1",
			changes: []TableChanges{{"parent", 1}, {"child", 2}, {"audit", 1}}, rows: 4},
		{name: "drop table", stmt: "DROP TABLE child",
			steps: []string{"create table child (4 rows)", "create index child_pid on child"}, rows: 4},
		{name: "drop trigger", stmt: "DROP TRIGGER parent_gone",
			steps: []string{"create trigger parent_gone on parent"}},
		{name: "create trigger", stmt: "CREATE TRIGGER t2 AFTER UPDATE ON wr BEGIN SELECT 1; END",
			steps: []string{"drop trigger t2 on wr"}},
		{name: "a planted trigger, the undo_info unchanged", stmt: "DELETE FROM child WHERE id = 10",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('create', 'trigger', 'child_keep', 'child', 'CREATE TRIGGER child_keep AFTER INSERT ON child BEGIN SELECT 1; END')`,
			steps:    []string{"create trigger child_keep on child"}, changes: []TableChanges{{"child", 1}}, rows: 1},
		{name: "a planted step already done", stmt: "DELETE FROM child WHERE id = 10",
			mutation: `INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('create', 'index', 'child_pid', 'child', 'CREATE INDEX child_pid ON child(pid)')`,
			steps:    []string{"skip index child_pid on child"}, changes: []TableChanges{{"child", 1}}, rows: 1},
	} {
		for _, dry := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s dry=%v", tt.name, dry), func(t *testing.T) {
				db, dir := openFixture(t, "")
				path, _, err := record(t, db, dir, tt.stmt)
				if err != nil {
					t.Fatalf("record: %v", err)
				}
				if tt.mutation != "" {
					mutate(t, path, tt.mutation)
				}
				res, err := Apply(db, path, Options{DryRun: dry})
				if err != nil {
					t.Fatalf("apply: %v", err)
				}
				var steps []string
				objects := 0
				for _, s := range res.Steps {
					action := s.Action
					if s.Skipped {
						action = "skip"
					} else {
						objects++
					}
					steps = append(steps, action+" "+s.String())
				}
				if strings.Join(steps, "; ") != strings.Join(tt.steps, "; ") {
					t.Errorf("steps %q, want %q", steps, tt.steps)
				}
				if fmt.Sprint(res.Changes) != fmt.Sprint(tt.changes) {
					t.Errorf("changes %v, want %v", res.Changes, tt.changes)
				}
				if res.Rows != tt.rows || res.Objects != objects {
					t.Errorf("rows %d objects %d, want %d and %d", res.Rows, res.Objects, tt.rows, objects)
				}
			})
		}
	}
}

func TestObjectStepString(t *testing.T) {
	for _, tt := range []struct {
		step ObjectStep
		want string
	}{
		{ObjectStep{Action: "create", Type: "table", Name: "notes", Table: "notes", Rows: 3}, "table notes (3 rows)"},
		{ObjectStep{Action: "drop", Type: "table", Name: "notes", Table: "notes"}, "table notes"},
		{ObjectStep{Action: "create", Type: "trigger", Name: "t", Table: "Notes"}, "trigger t on Notes"},
		{ObjectStep{Action: "create", Type: "index", Name: "NOTES", Table: "notes"}, "index NOTES"},
		{ObjectStep{Action: "create", Type: "view", Name: "v\x1b[2J", Table: "v\u202e"}, `view v\x1b[2J on v\u{202e}`},
	} {
		if got := tt.step.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.step, got, tt.want)
		}
	}
}
