package worker

import (
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// vtabDB is a database with an R*Tree table, FTS5 tables of every content
// kind, and a trigger that feeds one of them.
func vtabDB(t *testing.T) string {
	t.Helper()
	return buildDB(t, "v.db",
		"CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)",
		"INSERT INTO notes (body) VALUES ('alpha beta'), ('gamma delta'), ('optimize')",
		"CREATE VIRTUAL TABLE rt USING rtree(id, minx, maxx)",
		"INSERT INTO rt VALUES (1, 0, 1), (2, 2, 3)",
		"CREATE VIRTUAL TABLE ft USING fts5(body)",
		"INSERT INTO ft (rowid, body) SELECT id, body FROM notes",
		"CREATE VIRTUAL TABLE cl USING fts5(body, content='')",
		"INSERT INTO cl (rowid, body) SELECT id, body FROM notes",
		"CREATE VIRTUAL TABLE ext USING fts5(body, content='notes', content_rowid='id')",
		"INSERT INTO ext (ext) VALUES ('rebuild')",
		"CREATE TABLE cmds (cmd TEXT)",
		"CREATE TRIGGER cmds_run AFTER INSERT ON cmds BEGIN INSERT INTO cl (cl) VALUES (NEW.cmd); END",
		"CREATE TABLE feed (body TEXT)",
		"CREATE TRIGGER feed_index AFTER INSERT ON feed BEGIN INSERT INTO cl (body) VALUES (NEW.body); END",
	)
}

// TestVirtualTableReads: a virtual table's own statements (R*Tree prepares
// writes to its shadow tables when it connects) are not the agent's, so
// harmless reads answer in read_query and in the readonly profile's
// query_database, and the file stays as it was.
func TestVirtualTableReads(t *testing.T) {
	selects := []string{
		"SELECT * FROM rt",
		"SELECT count(*) FROM rt",
		"SELECT rtreecheck('rt')",
		"SELECT * FROM pragma_integrity_check",
		"SELECT * FROM pragma_quick_check",
		"SELECT name, type FROM pragma_table_list",
		"SELECT m.name, p.name FROM sqlite_schema AS m JOIN pragma_table_info(m.name) AS p",
		"SELECT rowid FROM ft WHERE ft MATCH 'alpha'",
		"SELECT count(*) FROM cl",
		"SELECT highlight(ext, 0, '[', ']') FROM ext WHERE ext MATCH 'gamma'",
	}
	statements := []string{
		"EXPLAIN QUERY PLAN SELECT * FROM rt WHERE minx > 1",
		"PRAGMA integrity_check",
		"PRAGMA quick_check",
		"PRAGMA table_list",
	}
	for _, mode := range []ipc.Mode{ipc.ModeRead, ipc.ModeSelect} {
		for _, sql := range append(append([]string{}, selects...), statements...) {
			t.Run(string(mode)+" "+sql, func(t *testing.T) {
				db := vtabDB(t)
				before := sqlitetest.FileDigest(t, db)
				req := request(db, ipc.OpQuery, mode, sql)
				req.ReadOnlyFile = mode == "select"
				resp := execute(req, hclog.NewNullLogger())
				isStatement := !strings.HasPrefix(sql, "SELECT")
				switch {
				case mode == "select" && isStatement:
					// query_database answers SELECT and WITH ... SELECT only.
					if resp.OK || resp.Code != errcode.ReadOnly || !strings.Contains(resp.Message, "only SELECT or WITH ... SELECT") {
						t.Fatalf("got %+v", resp)
					}
				case !resp.OK:
					t.Fatalf("refused: %s: %s", resp.Code, resp.Message)
				case strings.Contains(sql, "check") && !strings.Contains(resp.Text, "ok"):
					t.Fatalf("check did not pass: %q", resp.Text)
				}
				if sqlitetest.FileDigest(t, db) != before {
					t.Fatal("the database file changed")
				}
			})
		}
	}
	// The agent's own writes are still refused: the policy, query_only and
	// sqlite3_stmt_readonly all still apply.
	for _, sql := range []string{
		"INSERT INTO rt VALUES (9, 0, 1)",
		"INSERT INTO rt_node VALUES (99, x'00')",
		"DELETE FROM rt_parent",
		"INSERT INTO ft (ft) VALUES ('optimize')",
		"WITH x AS (SELECT * FROM rt) INSERT INTO notes (body) SELECT minx FROM x",
	} {
		t.Run("read refuses "+sql, func(t *testing.T) {
			db := vtabDB(t)
			before := sqlitetest.FileDigest(t, db)
			if resp := execute(request(db, ipc.OpQuery, "read", sql), hclog.NewNullLogger()); resp.OK {
				t.Fatalf("allowed: %+v", resp)
			}
			if sqlitetest.FileDigest(t, db) != before {
				t.Fatal("the database file changed")
			}
		})
	}
}

// TestFTSCommands: FTS5 commands that remove data belong to
// destructive_query; maintenance commands stay in write_query; a command
// that is only known when the statement runs is refused in write_query.
func TestFTSCommands(t *testing.T) {
	const hits = "SELECT (SELECT count(*) FROM cl WHERE cl MATCH 'alpha') || '/' || (SELECT count(*) FROM ext WHERE ext MATCH 'alpha') || '/' || (SELECT count(*) FROM ft WHERE ft MATCH 'alpha') AS hits"
	tests := []struct {
		name string
		mode ipc.Mode
		sql  string
		code errcode.Code // "" means allowed
		text string
		hits string // cl/ext/ft matches for 'alpha' afterwards, when set
	}{
		{"delete-all contentless", "write", "INSERT INTO cl(cl) VALUES('delete-all')", errcode.ReadOnly, "use destructive_query", "1/1/1"},
		{"delete-all any case", "write", "INSERT INTO cl(cl) VALUES('DELETE-All')", errcode.ReadOnly, "INSERT INTO cl(cl) VALUES('DELETE-All') is not allowed in write_query", "1/1/1"},
		{"delete-all external content", "write", "INSERT INTO ext(ext) VALUES('delete-all')", errcode.ReadOnly, "destructive_query", "1/1/1"},
		{"delete one row", "write", "INSERT INTO cl(cl, rowid, body) VALUES('delete', 1, 'alpha beta')", errcode.ReadOnly, "destructive_query", "1/1/1"},
		{"replace delete-all", "write", "REPLACE INTO ext(ext) VALUES('delete-all')", errcode.ReadOnly, "destructive_query", "1/1/1"},
		{"command from a subquery", "write", "INSERT INTO cl(cl) SELECT 'delete-all'", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from a scalar subquery", "write", "INSERT INTO cl(cl) VALUES((SELECT 'delete-all'))", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from a function", "write", "INSERT INTO cl(cl) VALUES(lower('DELETE-ALL'))", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from a concatenation", "write", "INSERT INTO cl(cl) VALUES('delete' || '-all')", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from CASE", "write", "INSERT INTO cl(cl) VALUES(CASE WHEN 1 THEN 'delete-all' ELSE 'optimize' END)", errcode.ReadOnly, "", "1/1/1"},
		{"command from a parameter", "write", "INSERT INTO cl(cl) VALUES(?1)", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"commands from several rows", "write", "INSERT INTO cl(cl) VALUES('optimize'), ('delete-all')", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from a trigger", "write", "INSERT INTO cmds VALUES ('delete-all')", errcode.ReadOnly, "computed while it runs", "1/1/1"},
		{"command from a CTE", "write", "WITH c(x) AS (SELECT 'delete-all') INSERT INTO cl(cl) SELECT x FROM c", errcode.ReadOnly, "", "1/1/1"},
		{"unknown command", "write", "INSERT INTO cl(cl) VALUES(' delete-all')", errcode.ReadOnly, "is not one of the FTS maintenance commands", "1/1/1"},
		{"optimize", "write", "INSERT INTO cl(cl) VALUES('optimize')", "", "ok: 1 rows affected", "1/1/1"},
		{"merge", "write", "INSERT INTO ft(ft, rank) VALUES('merge', 16)", "", "ok", "1/1/1"},
		{"rebuild external content", "write", "INSERT INTO ext(ext) VALUES('rebuild')", "", "ok", "1/1/1"},
		{"integrity-check", "write", "INSERT INTO ft(ft) VALUES('integrity-check')", "", "ok", "1/1/1"},
		{"automerge setting", "write", "INSERT INTO ft(ft, rank) VALUES('automerge', 8)", "", "ok", "1/1/1"},
		{"rank setting", "write", "INSERT INTO ft(ft, rank) VALUES('rank', 'bm25(10.0)')", "", "ok", "1/1/1"},
		{"ordinary insert", "write", "INSERT INTO cl(rowid, body) VALUES(10, 'alpha again')", "", "ok: 1 rows affected", "2/1/1"},
		{"ordinary insert of a word that is a command", "write", "INSERT INTO ft(body) SELECT body FROM notes WHERE body = 'optimize'", "", "ok: 1 rows affected", "1/1/1"},
		{"ordinary multi-row insert", "write", "INSERT INTO ft(body) VALUES ('alpha one'), ('alpha two')", "", "ok: 2 rows affected", "1/1/3"},
		{"insert select with grouping and order", "write", "INSERT INTO ft(rowid, body) SELECT id + 100, group_concat(body) FROM notes GROUP BY id ORDER BY id DESC", "", "ok: 3 rows affected", "1/1/2"},
		{"insert through a trigger", "write", "INSERT INTO feed VALUES ('alpha gamma')", "", "ok", "2/1/1"},
		{"update of the command column", "write", "UPDATE ft SET body = 'alpha' WHERE rowid = 2", "", "ok", "1/1/2"},
		{"delete-all in destructive", "destructive", "INSERT INTO cl(cl) VALUES('delete-all')", "", "ok", "0/1/1"},
		{"computed delete-all in destructive", "destructive", "INSERT INTO ext(ext) SELECT 'delete-all'", "", "ok", "1/0/1"},
		{"delete-all in read", "read", "INSERT INTO cl(cl) VALUES('delete-all')", errcode.ReadOnly, "INSERT is not allowed in read_query", "1/1/1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := vtabDB(t)
			before := sqlitetest.FileDigest(t, db)
			resp := execute(request(db, ipc.OpQuery, tt.mode, tt.sql), hclog.NewNullLogger())
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got %s: %s (ok=%v %q), want %s containing %q", resp.Code, resp.Message, resp.OK, resp.Text, tt.code, tt.text)
				}
				if sqlitetest.FileDigest(t, db) != before {
					t.Fatal("the database file changed after a refusal")
				}
			} else if !resp.OK || !strings.Contains(resp.Text, tt.text) {
				t.Fatalf("got %+v, want %q", resp, tt.text)
			}
			if got := execute(request(db, ipc.OpQuery, "read", hits), hclog.NewNullLogger()); got.Text != "hits\n"+tt.hits+"\n# 1 rows" {
				t.Fatalf("matches afterwards: %q, want %s", got.Text, tt.hits)
			}
		})
	}
}

// TestViewsAreReadable: a view that create_view accepts can be read.
// Views over full-text search work under trusted_schema=OFF; views SQLite
// would not read are refused with the reason, and nothing is stored.
func TestViewsAreReadable(t *testing.T) {
	tests := []struct {
		name, sql string
		code      errcode.Code // "" means stored and readable; text is then in the read
		text      string
	}{
		{"match", "SELECT rowid, body FROM ft WHERE ft MATCH 'alpha'", "", "1,alpha beta"},
		{"highlight and rank", "SELECT highlight(ft, 0, '[', ']') AS h, bm25(ft) < 0 AS scored FROM ft WHERE ft MATCH 'gamma' ORDER BY rank", "", "[gamma] delta,1"},
		{"snippet over external content", "SELECT snippet(ext, 0, '<', '>', '...', 4) AS s FROM ext WHERE ext MATCH 'beta'", "", "alpha <beta>"},
		{"table-valued fts", "SELECT rowid FROM ft('delta')", "", "2"},
		{"rtree", "SELECT id FROM rt WHERE minx >= 2", "", "2"},
		{"ends in a line comment", "SELECT 1 AS one -- the first", "", "one\n1"},
		{"pragma function", "SELECT name FROM pragma_table_info('notes')", errcode.InvalidArgument, `unsafe use of virtual table "pragma_table_info"`},
		{"rtreecheck", "SELECT rtreecheck('rt') AS c", errcode.InvalidArgument, "trusted_schema=OFF"},
		{"open block comment", "SELECT 1 /* never closed", errcode.InvalidArgument, "never closed"},
		{"dbpage", "SELECT pgno FROM sqlite_dbpage", errcode.Policy, "sqlite_dbpage"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			db := vtabDB(t)
			req := request(db, ipc.OpCreateView, "", "")
			req.View = &ipc.View{Name: "v", Select: tt.sql}
			resp := execute(req, hclog.NewNullLogger())
			read := execute(request(db, ipc.OpQuery, "read", "SELECT * FROM v"), hclog.NewNullLogger())
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got %s: %s (ok=%v), want %s containing %q", resp.Code, resp.Message, resp.OK, tt.code, tt.text)
				}
				if read.OK || !strings.Contains(read.Message, "no such table: v") {
					t.Fatalf("a refused view was stored: %+v", read)
				}
				return
			}
			if !resp.OK {
				t.Fatalf("refused: %s: %s", resp.Code, resp.Message)
			}
			if !read.OK || !strings.Contains(read.Text, tt.text) {
				t.Fatalf("read: %+v, want %q", read, tt.text)
			}
			sel := request(db, ipc.OpQuery, "select", "SELECT * FROM v")
			sel.ReadOnlyFile = true
			if r := execute(sel, hclog.NewNullLogger()); !r.OK {
				t.Fatalf("query_database: %s: %s", r.Code, r.Message)
			}
		})
	}
}

// TestSchemaTerminators: get_schema ends every statement with a ';' that
// a replay sees, also after a trailing comment.
func TestSchemaTerminators(t *testing.T) {
	db := vtabDB(t)
	log := hclog.NewNullLogger()
	for _, sql := range []string{
		"CREATE INDEX notes_body ON notes(body) -- by body",
		"CREATE INDEX notes_id ON notes(id) /* closed */",
	} {
		if r := execute(request(db, ipc.OpQuery, "write", sql), log); !r.OK {
			t.Fatalf("%s: %+v", sql, r)
		}
	}
	if r := execute(request(db, ipc.OpQuery, "write", "CREATE INDEX notes_x ON notes(body, id) /* open"), log); r.OK || r.Code != errcode.InvalidArgument || !strings.Contains(r.Message, "never closed") {
		t.Fatalf("an index ending in an open comment: %+v", r)
	}
	if r := execute(request(db, ipc.OpQuery, "read", "SELECT 1 /* open"), log); !r.OK {
		t.Fatalf("a read ending in an open comment: %+v", r)
	}
	req := request(db, ipc.OpCreateView, "", "")
	req.View = &ipc.View{Name: "tail", Select: "SELECT 1 AS x -- trailing", Description: "d"}
	if r := execute(req, log); !r.OK {
		t.Fatalf("create_view: %+v", r)
	}
	resp := execute(request(db, ipc.OpSchema, "read", ""), log)
	for _, want := range []string{
		"\nCREATE INDEX notes_body ON notes(body) -- by body\n;\n",
		"\nCREATE INDEX notes_id ON notes(id) /* closed */;\n",
		"\nCREATE VIEW \"tail\" AS\n-- description: d\nSELECT 1 AS x -- trailing\n;",
	} {
		if !strings.Contains(resp.Text+"\n", want) {
			t.Errorf("schema lacks %q:\n%s", want, resp.Text)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"CREATE TABLE t(x)", "CREATE TABLE t(x);"},
		{"CREATE VIEW v AS SELECT 1 -- c", "CREATE VIEW v AS SELECT 1 -- c\n;"},
		{"CREATE VIEW v AS SELECT 1 /* c", "CREATE VIEW v AS SELECT 1 /* c */;"},
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END;"},
	} {
		if got := terminated(tt.in); got != tt.want {
			t.Errorf("terminated(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, tt := range []struct{ in, want string }{
		{"CREATE TABLE sqlite_sequence(name,seq)", "-- CREATE TABLE sqlite_sequence(name,seq);"},
		{"CREATE TABLE 'f_idx'(segid,\r\n term)", "-- CREATE TABLE 'f_idx'(segid,\n--  term);"},
	} {
		if got := commentedOut(tt.in); got != tt.want {
			t.Errorf("commentedOut(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}
