package tests

import (
	"database/sql"
	"encoding/json"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// Regression tests for the policy defects of issue 11, over stdio with the
// real binaries.

// vtabSession starts a server on a memory-profile database with an R*Tree table, a
// contentless and an external-content FTS5 table.
func vtabSession(t *testing.T) (*session, string) {
	t.Helper()
	db := newDB(t)
	s := start(t, db)
	for _, sql := range []string{
		"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO notes (body) VALUES ('alpha beta'), ('gamma delta')",
		"CREATE VIRTUAL TABLE rt USING rtree(id, minx, maxx)",
		"INSERT INTO rt VALUES (1, 0, 1), (2, 2, 3)",
		"CREATE VIRTUAL TABLE f USING fts5(b, content='')",
		"INSERT INTO f (rowid, b) VALUES (1, 'alpha beta'), (2, 'gamma delta')",
		"CREATE VIRTUAL TABLE ext USING fts5(body, content='notes', content_rowid='id')",
		"INSERT INTO ext (ext) VALUES ('rebuild')",
	} {
		s.ok("write_query", q(sql))
	}
	return s, db
}

// TestPolicyDefectFTSCommands: FTS5 commands that remove data go through
// destructive_query (checked, snapshotted, audited); maintenance commands
// stay in write_query.
func TestPolicyDefectFTSCommands(t *testing.T) {
	t.Parallel()
	s, db := vtabSession(t)
	count := func(table string) string {
		return s.ok("read_query", q("SELECT count(*) AS n FROM "+table+" WHERE "+table+" MATCH 'alpha OR gamma'"))
	}
	for _, sql := range []string{
		"INSERT INTO f(f) VALUES('delete-all')",
		"INSERT INTO f(f, rowid, b) VALUES('delete', 1, 'alpha beta')",
		"INSERT INTO ext(ext) VALUES('delete-all')",
		"INSERT INTO f(f) SELECT 'delete-all'",
		"INSERT INTO f(f) VALUES(lower('DELETE-ALL'))",
	} {
		before := dump(t, db, "notes")
		text := s.fails("write_query", q(sql), "READ_ONLY_VIOLATION")
		if !strings.Contains(text, "use destructive_query") {
			t.Errorf("%s: %s", sql, text)
		}
		if dump(t, db, "notes") != before {
			t.Errorf("%s changed the database", sql)
		}
	}
	if got := count("f"); got != "n\n2\n# 1 rows" {
		t.Fatalf("after refusals, f: %q", got)
	}
	if got := count("ext"); got != "n\n2\n# 1 rows" {
		t.Fatalf("after refusals, ext: %q", got)
	}
	for _, sql := range []string{
		"INSERT INTO f(f) VALUES('optimize')",
		"INSERT INTO ext(ext) VALUES('rebuild')",
		"INSERT INTO f(f, rank) VALUES('automerge', 4)",
		"INSERT INTO f(f) VALUES('integrity-check')",
	} {
		s.ok("write_query", q(sql))
	}
	text := s.ok("destructive_query", map[string]any{"query": "INSERT INTO f(f) VALUES('delete-all')", "reason": "rebuild the index from scratch"})
	if !strings.Contains(text, "; snapshot: ") {
		t.Fatalf("destructive_query: %s", text)
	}
	if got := count("f"); got != "n\n0\n# 1 rows" {
		t.Fatalf("after delete-all, f: %q", got)
	}
}

// TestFTSSyncTriggers: the external-content triggers of SQLite's FTS5
// documentation. An INSERT keeps the index in step through write_query; an
// UPDATE fires a trigger that sends 'delete', an FTS command that removes
// indexed data, so write_query refuses it, naming the trigger (the agent
// wrote no FTS command), and destructive_query runs it.
func TestFTSSyncTriggers(t *testing.T) {
	t.Parallel()
	s, db := vtabSession(t)
	for _, sql := range []string{
		"CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN INSERT INTO ext(rowid, body) VALUES (new.id, new.body); END",
		"CREATE TRIGGER notes_ad AFTER DELETE ON notes BEGIN INSERT INTO ext(ext, rowid, body) VALUES ('delete', old.id, old.body); END",
		"CREATE TRIGGER notes_au AFTER UPDATE ON notes BEGIN INSERT INTO ext(ext, rowid, body) VALUES ('delete', old.id, old.body); INSERT INTO ext(rowid, body) VALUES (new.id, new.body); END",
	} {
		s.ok("destructive_query", map[string]any{"query": sql, "reason": "keep the full-text index in step with notes"})
	}
	match := func(word string) string {
		return s.ok("read_query", q("SELECT rowid FROM ext WHERE ext MATCH '"+word+"' ORDER BY rowid"))
	}
	s.ok("write_query", q("INSERT INTO notes (body) VALUES ('epsilon zeta')"))
	if got := match("epsilon"); got != "rowid\n3\n# 1 rows" {
		t.Fatalf("after the insert: %q", got)
	}
	before := dump(t, db, "notes")
	text := s.fails("write_query", q("UPDATE notes SET body = 'alpha omega' WHERE id = 1"), "READ_ONLY_VIOLATION")
	for _, want := range []string{"INSERT INTO ext(ext) VALUES('delete') (in trigger notes_au, which this statement fires)", "removes indexed data", "run this statement with destructive_query"} {
		if !strings.Contains(text, want) {
			t.Fatalf("refusal %q lacks %q", text, want)
		}
	}
	if dump(t, db, "notes") != before {
		t.Fatal("the refused UPDATE changed notes")
	}
	s.ok("destructive_query", map[string]any{"query": "UPDATE notes SET body = 'alpha omega' WHERE id = 1", "reason": "reword note 1"})
	if got := match("omega"); got != "rowid\n1\n# 1 rows" {
		t.Fatalf("after the update: %q", got)
	}
	if got := match("beta"); got != "rowid\n# 0 rows" {
		t.Fatalf("the old words of note 1 are still indexed: %q", got)
	}
}

// TestPolicyDefectVirtualTableReads: a virtual table's own statements are
// not the agent's, so harmless reads answer in read_query and in the
// readonly profile's query_database, with fts5 and rtree tables present.
func TestPolicyDefectVirtualTableReads(t *testing.T) {
	t.Parallel()
	selects := []string{
		"SELECT * FROM rt",
		"SELECT count(*) FROM rt",
		"SELECT rtreecheck('rt')",
		"SELECT * FROM pragma_integrity_check",
		"SELECT * FROM pragma_quick_check",
		"SELECT name, type FROM pragma_table_list",
		"SELECT m.name AS tbl, p.name AS col FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS p",
		"SELECT rowid FROM f WHERE f MATCH 'alpha'",
	}
	statements := []string{
		"EXPLAIN QUERY PLAN SELECT * FROM rt WHERE minx > 1",
		"PRAGMA integrity_check",
		"PRAGMA quick_check",
		"PRAGMA table_list",
	}

	t.Run("read_query", func(t *testing.T) {
		t.Parallel()
		s, db := vtabSession(t)
		before := dump(t, db, "notes")
		for _, sql := range append(append([]string{}, selects...), statements...) {
			text := s.ok("read_query", q(sql))
			if strings.Contains(sql, "check") && !strings.Contains(text, "\nok\n") {
				t.Errorf("%s: %q", sql, text)
			}
		}
		if dump(t, db, "notes") != before {
			t.Fatal("reads changed the database")
		}
		// The agent's own writes are still refused.
		s.fails("read_query", q("INSERT INTO rt VALUES (9, 0, 1)"), "READ_ONLY_VIOLATION")
		s.fails("read_query", q("INSERT INTO f(f) VALUES ('optimize')"), "READ_ONLY_VIOLATION")
	})

	t.Run("query_database", func(t *testing.T) {
		t.Parallel()
		path := filepath.Join(testDir(t), "shop.db")
		db, err := sql.Open("sqlite", "file:"+path)
		if err != nil {
			t.Fatal(err)
		}
		for _, stmt := range []string{
			"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
			"INSERT INTO notes (body) VALUES ('alpha beta'), ('gamma delta')",
			"CREATE VIRTUAL TABLE rt USING rtree(id, minx, maxx)",
			"INSERT INTO rt VALUES (1, 0, 1), (2, 2, 3)",
			"CREATE VIRTUAL TABLE f USING fts5(b)",
			"INSERT INTO f (rowid, b) VALUES (1, 'alpha beta')",
		} {
			if _, err := db.Exec(stmt); err != nil {
				t.Fatal(err)
			}
		}
		db.Close()
		before := fileState(t, path)
		s := startRO(t, path)
		for _, sql := range selects {
			var page page
			s.roOK("query_database", map[string]any{"sql": sql}, &page)
			if page.ReturnedRows == 0 {
				t.Errorf("%s: no rows", sql)
			}
		}
		// query_database answers SELECT and WITH ... SELECT only; the
		// statement forms are refused for that reason, not as an INSERT.
		for _, sql := range statements {
			e := s.roFails("query_database", map[string]any{"sql": sql}, "READ_ONLY_VIOLATION")
			if strings.Contains(e.Message, "INSERT") || !strings.Contains(e.Message, "only SELECT or WITH ... SELECT") {
				t.Errorf("%s: %s", sql, e.Message)
			}
			// A PRAGMA's refusal names the SELECT that reads the same rows,
			// and that SELECT answers.
			if _, form, ok := strings.Cut(e.Message, "read it as a table instead: "); ok {
				var page page
				s.roOK("query_database", map[string]any{"sql": form}, &page)
				if page.ReturnedRows == 0 {
					t.Errorf("%s: the suggested %s gave no rows", sql, form)
				}
			} else if strings.HasPrefix(sql, "PRAGMA") {
				t.Errorf("%s: no SELECT form suggested: %s", sql, e.Message)
			}
		}
		if fileState(t, path) != before {
			t.Fatal("the read-only file changed")
		}
	})
}

// TestPolicyDefectViews: a view over full-text search is stored and read;
// a view SQLite would not read is refused with the reason, not stored.
func TestPolicyDefectViews(t *testing.T) {
	t.Parallel()
	s, _ := vtabSession(t)
	s.ok("create_view", map[string]any{"name": "alpha_notes", "select_sql": "SELECT rowid, highlight(ext, 0, '[', ']') AS body FROM ext WHERE ext MATCH 'alpha' ORDER BY rank",
		"description": "notes mentioning alpha"})
	if got := s.ok("read_query", q("SELECT * FROM alpha_notes")); got != "rowid,body\n1,[alpha] beta\n# 1 rows" {
		t.Fatalf("read the fts view: %q", got)
	}
	s.ok("create_view", map[string]any{"name": "f_hits", "select_sql": "SELECT rowid FROM f WHERE f MATCH 'gamma'"})
	if got := s.ok("read_query", q("SELECT * FROM f_hits")); got != "rowid\n2\n# 1 rows" {
		t.Fatalf("read the contentless fts view: %q", got)
	}
	text := s.fails("create_view", map[string]any{"name": "cols", "select_sql": "SELECT * FROM pragma_table_info('notes')"}, "INVALID_ARGUMENT")
	if !strings.Contains(text, `unsafe use of virtual table "pragma_table_info"`) || !strings.Contains(text, "trusted_schema=OFF") || !strings.Contains(text, "read_query") {
		t.Fatalf("pragma view: %s", text)
	}
	s.fails("read_query", q("SELECT * FROM cols"), "SQL_ERROR")
	// Every view list_tables shows can be read.
	for _, line := range strings.Split(s.ok("list_tables", map[string]any{"include_row_counts": false}), "\n") {
		if name, rest, _ := strings.Cut(line, ","); strings.HasPrefix(rest, "view,") {
			s.ok("read_query", q(`SELECT * FROM "`+name+`" LIMIT 1`))
		}
	}
}

// TestPolicyDefectSchemaReplay: get_schema prints SQL that sqlite3 replays
// into the same schema, also for views and indexes that end in a comment,
// for the tables SQLite makes itself (AUTOINCREMENT's sqlite_sequence,
// ANALYZE's sqlite_stat1) and, with include_system, for the server's
// objects and the shadow tables of virtual tables.
func TestPolicyDefectSchemaReplay(t *testing.T) {
	t.Parallel()
	sqlite3, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("no sqlite3 command on this machine; the replay needs it")
	}
	s, db := vtabSession(t)
	s.ok("write_query", q("CREATE INDEX notes_body ON notes(body) -- by body"))
	s.ok("write_query", q("CREATE INDEX notes_id ON notes(id, body) /* both */"))
	s.fails("write_query", q("CREATE INDEX notes_x ON notes(body, id) /* never closed"), "INVALID_ARGUMENT")
	s.ok("destructive_query", map[string]any{"query": "CREATE TRIGGER notes_index AFTER INSERT ON notes BEGIN INSERT INTO ext(rowid, body) VALUES (NEW.id, NEW.body); END -- keep ext in step", "reason": "index new notes"})
	s.ok("create_view", map[string]any{"name": "tail_comment", "select_sql": "SELECT id FROM notes -- the ids", "description": "ids"})
	s.ok("create_view", map[string]any{"name": "plain", "select_sql": "SELECT body FROM notes;"})
	s.ok("create_view", map[string]any{"name": "closed_comment", "select_sql": "SELECT 1 AS one /* closed */"})
	s.fails("create_view", map[string]any{"name": "open_comment", "select_sql": "SELECT 1 /* never closed"}, "INVALID_ARGUMENT")
	s.ok("write_query", q("CREATE TABLE counters (id INTEGER PRIMARY KEY AUTOINCREMENT, n INTEGER)"))
	s.ok("write_query", q("INSERT INTO counters (n) VALUES (1)"))
	s.ok("write_query", q("ANALYZE"))

	// objects lists a database's schema; sqlite_stat4 exists only where
	// SQLite is built with it, which the sqlite3 command may not be.
	objects := func(path string, server bool) string {
		where := "name <> 'sqlite_stat4'"
		if !server {
			where += " AND tbl_name NOT IN ('memory_events', 'memory_checkpoints', 'query_log', 'query_errors')" +
				` AND tbl_name NOT LIKE 'memory\_events\_fts%' ESCAPE '\' AND tbl_name NOT LIKE 'memory\_checkpoints\_fts%' ESCAPE '\'` + // the memory's index
				` AND tbl_name NOT LIKE 'memory\_recall%' ESCAPE '\'` // and the recall index
		}
		rows, err := sqlitetest.Rows(openDirect(t, path), `SELECT type, name, tbl_name, coalesce(sql, '') FROM sqlite_schema WHERE `+where+` ORDER BY type, name`)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, row := range rows {
			b, _ := json.Marshal(row) // four strings
			out = append(out, string(b))
		}
		return strings.Join(out, "\n")
	}
	for _, all := range []bool{false, true} {
		schema := s.ok("get_schema", map[string]any{"include_system": all})
		// SPEC 5's header, shadow tables counted among the hidden ones.
		if header, _, _ := strings.Cut(schema, "\n"); !all && !regexp.MustCompile(`^-- \d+ objects \(\d+ server objects hidden; include_system=true shows them\)$`).MatchString(header) {
			t.Fatalf("header %q", header)
		}
		replay := filepath.Join(testDir(t), "replay.db")
		cmd := exec.Command(sqlite3, "-bail", replay)
		cmd.Stdin = strings.NewReader(schema)
		if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
			t.Fatalf("include_system=%v: sqlite3 replay: %v\n%s\nscript:\n%s", all, err, out, schema)
		}
		want, got := objects(db, all), objects(replay, all)
		if got != want {
			t.Fatalf("include_system=%v: replayed schema differs:\n got:\n%s\nwant:\n%s\nscript:\n%s", all, got, want, schema)
		}
		// The replay made what SQLite makes itself; the server's objects
		// are compared when they were printed.
		for _, name := range []string{"sqlite_sequence", "sqlite_stat1", "ext_data", "f_data", "rt_node", "memory_events_no_update"} {
			if compared := strings.Contains(want, `"`+name+`"`); compared != (all || name != "memory_events_no_update") {
				t.Fatalf("include_system=%v: %s compared: %v", all, name, compared)
			}
		}
		if n := strings.Count(want, "\n") + 1; n < 20 {
			t.Fatalf("include_system=%v: only %d objects compared:\n%s", all, n, want)
		}
	}
}

// TestPolicyDefectSmallerOnes: names compare as SQLite compares them;
// EXPLAIN of an allowed read is answered; a PRAGMA with any value is a
// write; raw pages are not readable.
func TestPolicyDefectSmallerOnes(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE \"memory_event\u017f\" (x)"))
	s.ok("write_query", q("INSERT INTO \"memory_event\u017f\" VALUES (1)"))
	s.fails("write_query", q("CREATE TABLE \"MEMORY_EVENTS\" (x)"), "PROTECTED_TABLE")
	if got := s.ok("read_query", q("EXPLAIN PRAGMA user_version")); !strings.HasPrefix(got, "addr,opcode,") {
		t.Fatalf("EXPLAIN PRAGMA user_version: %q", got)
	}
	if got := s.ok("read_query", q("PRAGMA user_version")); got != "user_version\n0\n# 1 rows" {
		t.Fatalf("PRAGMA user_version: %q", got)
	}
	s.ok("read_query", q("PRAGMA journal_mode"))
	for _, sql := range []string{"PRAGMA auto_vacuum = ''", "PRAGMA query_only = ''", "PRAGMA auto_vacuum = 1", "PRAGMA user_version('')", "PRAGMA journal_mode = ''"} {
		text := s.fails("read_query", q(sql), "POLICY_VIOLATION")
		if !strings.Contains(text, "a PRAGMA with a value sets it") {
			t.Errorf("%s: %s", sql, text)
		}
	}
	if got := s.ok("read_query", q("PRAGMA journal_mode")); got != "journal_mode\nwal\n# 1 rows" {
		t.Fatalf("journal mode after the refusals: %q", got)
	}
	// Deleted rows stay in free pages; raw pages are not readable.
	s.ok("write_query", q("CREATE TABLE secrets (s TEXT)"))
	s.ok("write_query", q("INSERT INTO secrets VALUES ('hunter2')"))
	s.ok("destructive_query", map[string]any{"query": "DELETE FROM secrets", "reason": "forget it"})
	for _, sql := range []string{"SELECT * FROM sqlite_dbpage", "SELECT count(*) FROM sqlite_dbpage('main')", "SELECT data FROM sqlite_dbpage WHERE pgno = 1"} {
		if text := s.fails("read_query", q(sql), "POLICY_VIOLATION"); !strings.Contains(text, "free pages that still hold deleted rows") {
			t.Errorf("%s: %s", sql, text)
		}
	}
}
