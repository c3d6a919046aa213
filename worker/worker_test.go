package worker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// testDB creates a database with a small table and the protected tables'
// names, the way the front would have bootstrapped them.
func testDB(t *testing.T) string {
	t.Helper()
	return buildDB(t, "w.db",
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)",
		"INSERT INTO t (name, score) VALUES ('a', 1.5), ('b', NULL), ('', 2)",
		"CREATE TABLE memory_events (id INTEGER PRIMARY KEY, content TEXT NOT NULL)",
		"CREATE TABLE kids (id INTEGER PRIMARY KEY, t_id INTEGER REFERENCES t(id))",
		"CREATE INDEX kids_t ON kids(t_id)",
	)
}

// buildDB creates name in a test folder (WAL, as the front leaves it) and
// runs stmts on it.
func buildDB(t *testing.T, name string, stmts ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, sql := range append([]string{"PRAGMA journal_mode=WAL"}, stmts...) {
		if err := c.Exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	return path
}

func request(db string, op ipc.Op, mode ipc.Mode, sql string) *ipc.Request {
	return &ipc.Request{
		Version: ipc.Version, Op: op, Mode: mode, DB: db, SQL: sql, Limit: 100,
		Caps:   ipc.Caps{MaxRows: 1000, MaxResultBytes: 32768, MaxCellChars: 2000, MaxUpdateRows: 2},
		Limits: ipc.Limits{TimeoutMS: 5000, MaxGrowthMB: 16},
	}
}

func TestQuery(t *testing.T) {
	tests := []struct {
		name string
		mode ipc.Mode
		sql  string
		code errcode.Code
		text string
	}{
		{"csv", "read", "SELECT * FROM t ORDER BY id", "", "id,name,score\n1,a,1.5\n2,b,\n3,\"\",2.0\n# 3 rows"},
		{"empty", "read", "  -- nothing\n", errcode.InvalidArgument, "the query is empty"},
		{"two statements", "read", "SELECT 1; SELECT 2", errcode.MultipleStatements, "only one statement"},
		{"trailing semicolons and comment", "read", "SELECT 1 AS x;; -- done", "", "x\n1\n# 1 rows"},
		{"syntax", "read", "SELEC 1", errcode.SQL, "syntax error"},
		{"no table", "read", "SELECT * FROM nope", errcode.SQL, "no such table: nope; list_tables shows the tables"},
		{"write in read", "read", "INSERT INTO t (name) VALUES ('x')", errcode.ReadOnly, "write_query"},
		{"reindex in read", "read", "REINDEX", "", ""},
		{"insert", "write", "INSERT INTO t (name) VALUES ('x')", "", "ok: 1 rows affected (last_insert_rowid=4)"},
		{"select in write", "write", "SELECT count(*) AS n FROM t", "", "n\n3\n# 1 rows"},
		{"update guard", "write", "UPDATE t SET score = 0", errcode.Policy, "would change 3 rows, more than --max-update-rows=2"},
		{"small update", "write", "UPDATE t SET score = 0 WHERE id = 1", "", "ok: 1 rows affected"},
		{"ddl", "write", "CREATE TABLE u (a)", "", "ok: schema statement executed"},
		{"protected", "write", "INSERT INTO memory_events (content) VALUES ('x')", errcode.Protected, "memory_events"},
		{"vacuum", "destructive", "VACUUM", errcode.Policy, "VACUUM"},
		{"delete", "destructive", "DELETE FROM t WHERE id = 3", "", "ok: 1 rows affected; snapshots are disabled"},
		{"fk", "write", "INSERT INTO kids (t_id) VALUES (99)", errcode.SQL, "FOREIGN KEY constraint failed"},
		{"bad mode", "sudo", "SELECT 1", errcode.InvalidArgument, "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := execute(request(testDB(t), ipc.OpQuery, tt.mode, tt.sql), hclog.NewNullLogger())
			if tt.code == "" && tt.text == "" {
				// Refused one way or another, never run: SQLite decides.
				if resp.OK {
					t.Fatalf("allowed: %+v", resp)
				}
				return
			}
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got %s: %s (ok=%v %q), want %s containing %q", resp.Code, resp.Message, resp.OK, resp.Text, tt.code, tt.text)
				}
				return
			}
			if !resp.OK || resp.Text != tt.text {
				t.Fatalf("got %+v, want %q", resp, tt.text)
			}
		})
	}
}

func TestQueryPagingAndJSON(t *testing.T) {
	db := testDB(t)
	req := request(db, ipc.OpQuery, "read", "SELECT id FROM t ORDER BY id")
	req.Limit, req.Offset = 1, 1
	resp := execute(req, hclog.NewNullLogger())
	if want := "id\n2\n# 1 rows, truncated by limit=1 (more rows exist; raise limit up to 1000, use offset=2, or narrow the query)"; resp.Text != want {
		t.Fatalf("got %q", resp.Text)
	}
	req.Format, req.Offset, req.Limit = "json", 0, 2
	resp = execute(req, hclog.NewNullLogger())
	if want := `{"columns":["id"],"rows":[[1],[2]],"returnedRows":2,"limit":2,"offset":0,"hasMore":true}`; resp.Text != want || string(resp.JSON) != want {
		t.Fatalf("got %q", resp.Text)
	}
}

func TestSelectModeRefusesExplain(t *testing.T) {
	req := request(testDB(t), ipc.OpQuery, "select", "EXPLAIN SELECT 1")
	req.ReadOnlyFile = true
	if resp := execute(req, hclog.NewNullLogger()); resp.OK || resp.Code != errcode.ReadOnly {
		t.Fatalf("got %+v", resp)
	}
}

func TestMissingDatabase(t *testing.T) {
	resp := execute(request(filepath.Join(t.TempDir(), "none.db"), ipc.OpQuery, "read", "SELECT 1"), hclog.NewNullLogger())
	if resp.Code != errcode.DatabaseUnavailable {
		t.Fatalf("got %+v", resp)
	}
}

func TestCatalogue(t *testing.T) {
	db := testDB(t)
	log := hclog.NewNullLogger()
	req := request(db, ipc.OpListTables, "read", "")
	req.Table = &ipc.Table{RowCounts: true}
	if resp := execute(req, log); resp.Text != "name,type,system,rows\nt,table,0,3\nmemory_events,table,1,0\nkids,table,0,0\n# 3 rows" {
		t.Fatalf("list_tables: %q", resp.Text)
	}
	req = request(db, ipc.OpDescribeTable, "read", "")
	req.Table = &ipc.Table{Name: "KIDS"}
	want := "# columns\ncid,name,type,notnull,default,pk\n0,id,INTEGER,0,,1\n1,t_id,INTEGER,0,,0\n\n# foreign_keys\nfrom,to_table,to_column\nt_id,t,id\n\n# indexes\nname,unique,origin,columns\nkids_t,0,c,t_id"
	if resp := execute(req, log); resp.Text != want {
		t.Fatalf("describe:\n%s", resp.Text)
	}
	req.Table = &ipc.Table{Name: "kids", JSON: true}
	if resp := execute(req, log); resp.Text != `{"table":"kids","columns":[{"name":"id","type":"INTEGER","nullable":false,"primaryKey":true},{"name":"t_id","type":"INTEGER","nullable":true,"primaryKey":false}],"foreignKeys":[{"column":"t_id","referencesTable":"t","referencesColumn":"id"}]}` {
		t.Fatalf("describe json: %s", resp.Text)
	}
	req.Table = &ipc.Table{Name: "nope", JSON: true}
	if resp := execute(req, log); resp.Code != errcode.TableNotFound || resp.Message != `Table "nope" does not exist.` {
		t.Fatalf("not found: %+v", resp)
	}
	req = request(db, ipc.OpSchema, "read", "")
	resp := execute(req, log)
	if !strings.HasPrefix(resp.Text, "-- 3 objects (1 server objects hidden; include_system=true shows them)\n\nCREATE TABLE t (") || !strings.HasSuffix(resp.Text, "CREATE INDEX kids_t ON kids(t_id);") {
		t.Fatalf("schema:\n%s", resp.Text)
	}
}

func TestCreateView(t *testing.T) {
	db := testDB(t)
	log := hclog.NewNullLogger()
	req := request(db, ipc.OpCreateView, "", "")
	req.View = &ipc.View{Name: "names", Select: "SELECT name FROM t;", Description: "the\n names "}
	if resp := execute(req, log); resp.Text != "ok: view names created" {
		t.Fatalf("create: %+v", resp)
	}
	req.View = &ipc.View{Name: "names", Select: "SELECT id FROM t", Replace: true}
	resp := execute(req, log)
	if resp.Text != "ok: view names replaced; the previous definition is kept in query_log" || resp.Detail.Fields()["previous_sql"] != "CREATE VIEW \"names\" AS\n-- description: the names\nSELECT name FROM t" {
		t.Fatalf("replace: %+v", resp)
	}
	req.View = &ipc.View{Name: "w", Select: "DELETE FROM t"}
	if resp := execute(req, log); resp.OK || resp.Code != errcode.ReadOnly {
		t.Fatalf("writing select: %+v", resp)
	}
}

func TestMainRefusesBadFrames(t *testing.T) {
	var out, errOut strings.Builder
	if code := Main(strings.NewReader(`{"v":99,"op":"query","db":"x"}`), &out, &errOut); code != 0 {
		t.Fatalf("exit %d", code)
	}
	if !strings.Contains(out.String(), `"code":"INVALID_ARGUMENT"`) || !strings.Contains(out.String(), "protocol version 99") {
		t.Fatalf("got %s", out.String())
	}
}

func TestSettingReads(t *testing.T) {
	tests := []struct {
		mode ipc.Mode
		sql  string
		code errcode.Code
		text string
	}{
		{"read", "PRAGMA journal_mode", "", "journal_mode\nwal\n# 1 rows"},
		{"read", "PRAGMA user_version", "", "user_version\n0\n# 1 rows"},
		{"write", "PRAGMA application_id", "", "application_id\n0\n# 1 rows"},
		{"read", "PRAGMA main.journal_mode", "", "journal_mode\nwal\n# 1 rows"},
		{"read", "EXPLAIN PRAGMA user_version", "", "addr,opcode,p1,p2,p3,p4,p5,comment"},
		{"read", "EXPLAIN QUERY PLAN SELECT * FROM t WHERE id = 1", "", "SEARCH t USING INTEGER PRIMARY KEY"},
		{"read", "PRAGMA journal_mode = ''", errcode.Policy, "PRAGMA journal_mode = '' is not allowed in any tool: a PRAGMA with a value sets it"},
		{"destructive", "PRAGMA user_version = ''", errcode.Policy, "a PRAGMA with a value sets it"},
		{"read", "PRAGMA schema_version = ''", errcode.Policy, "a PRAGMA with a value sets it"},
		{"read", "PRAGMA query_only = ''", errcode.Policy, "PRAGMA query_only = '' is not allowed"},
		{"read", "PRAGMA auto_vacuum = ''", errcode.Policy, "PRAGMA auto_vacuum = '' is not allowed"},
		{"read", "PRAGMA auto_vacuum = 1", errcode.Policy, "PRAGMA auto_vacuum = 1 is not allowed"},
		{"write", "EXPLAIN PRAGMA journal_mode = ''", errcode.Policy, "a PRAGMA with a value sets it"},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode)+" "+tt.sql, func(t *testing.T) {
			db := testDB(t)
			resp := execute(request(db, ipc.OpQuery, tt.mode, tt.sql), hclog.NewNullLogger())
			if tt.code != "" {
				if resp.OK || resp.Code != tt.code || !strings.Contains(resp.Message, tt.text) {
					t.Fatalf("got %+v", resp)
				}
			} else if !resp.OK || !strings.Contains(resp.Text, tt.text) {
				t.Fatalf("got %+v", resp)
			}
			// Whatever happened, the file is still in WAL mode.
			after := execute(request(db, ipc.OpQuery, "read", "SELECT journal_mode FROM pragma_journal_mode"), hclog.NewNullLogger())
			if after.Text != "journal_mode\nwal\n# 1 rows" {
				t.Fatalf("journal mode after: %q", after.Text)
			}
		})
	}
}

func TestOffsetPastTheEnd(t *testing.T) {
	for _, format := range []ipc.Format{ipc.FormatCSV, ipc.FormatJSON} {
		req := request(testDB(t), ipc.OpQuery, "read", "SELECT id FROM t ORDER BY id")
		req.Format, req.Offset, req.Limit = format, 3, 2
		resp := execute(req, hclog.NewNullLogger())
		want := "id\n# 0 rows"
		if format == "json" {
			want = `{"columns":["id"],"rows":[],"returnedRows":0,"limit":2,"offset":3,"hasMore":false}`
		}
		if resp.Text != want {
			t.Fatalf("%s: got %q", format, resp.Text)
		}
		req.Offset = 50
		if resp := execute(req, hclog.NewNullLogger()); resp.Rows != 0 {
			t.Fatalf("%s: offset 50 returned %q", format, resp.Text)
		}
	}
}

func TestReturningCaps(t *testing.T) {
	db := testDB(t)
	req := request(db, ipc.OpQuery, "write", "INSERT INTO t (name) VALUES ('x'), ('y'), ('z') RETURNING id")
	req.Caps.MaxRows = 2
	resp := execute(req, hclog.NewNullLogger())
	want := "ok: 3 rows affected (last_insert_rowid=6)\nid\n4\n5\n# 2 rows, truncated by limit=2 (more rows exist; raise limit up to 2, use offset=2, or narrow the query)"
	if resp.Text != want {
		t.Fatalf("got %q", resp.Text)
	}
	// Every row was inserted, also those past the cap.
	if r := execute(request(db, ipc.OpQuery, "read", "SELECT count(*) FROM t"), hclog.NewNullLogger()); r.Text != "count(*)\n6\n# 1 rows" {
		t.Fatalf("count: %q", r.Text)
	}
}
