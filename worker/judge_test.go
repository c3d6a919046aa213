package worker

import (
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// judgeDB is a node's file: tables with clock and random defaults, a
// trigger and a view that read the clock, columns named like functions.
func judgeDB(t *testing.T) string {
	t.Helper()
	return buildDB(t, "node.db",
		"CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL)",
		"INSERT INTO t (name, score) VALUES ('a', 1.5), ('b', NULL)",
		"CREATE TABLE memory_events (id INTEGER PRIMARY KEY, content TEXT NOT NULL)",
		"CREATE TABLE d (id INTEGER PRIMARY KEY, a TEXT, at TEXT DEFAULT CURRENT_TIMESTAMP)",
		"CREATE TABLE r (id INTEGER PRIMARY KEY, v INTEGER DEFAULT (random()))",
		"CREATE TABLE k (now TEXT, random INTEGER, nowhere TEXT)",
		"CREATE TABLE lg (x)",
		"CREATE TRIGGER lg_stamp AFTER INSERT ON lg BEGIN INSERT INTO d (a, at) VALUES (NEW.x, datetime('now')); END",
		"CREATE VIEW clock AS SELECT datetime('now') AS n",
		"CREATE TABLE days (id INTEGER PRIMARY KEY, at TEXT CHECK (date(at) IS NOT NULL), day TEXT AS (date(at, '+1 day')))",
		"CREATE INDEX days_month ON days(strftime('%m', at))",
		"CREATE TABLE e (id INTEGER PRIMARY KEY, at TEXT DEFAULT (datetime('now')))",
		"CREATE VIRTUAL TABLE docs USING fts5(body)",
		"CREATE TABLE seq (id INTEGER PRIMARY KEY AUTOINCREMENT, v)",
		"CREATE VIEW names AS SELECT name FROM t",
	)
}

func judgeRequest(db string, mode ipc.Mode, sql string) *ipc.Request {
	req := request(db, ipc.OpQuery, mode, sql)
	req.Judge, req.Cluster, req.ReadOnlyFile = true, true, true
	return req
}

// TestJudgeCluster: what a cluster refuses besides SPEC 4, and the
// look-alikes it must let through.
func TestJudgeCluster(t *testing.T) {
	db := judgeDB(t)
	tests := []struct {
		name string
		mode ipc.Mode
		sql  string
		code errcode.Code
		want string // in the refusal
	}{
		{"random", "write", "INSERT INTO t (score) VALUES (random())", errcode.Policy, "random() is not allowed in a write in cluster mode"},
		{"random inside", "write", "UPDATE t SET score = abs(random()) % 10 WHERE id = 1", errcode.Policy, "random()"},
		{"randomblob", "write", "INSERT INTO t (name) VALUES (hex(randomblob(4)))", errcode.Policy, "randomblob()"},
		{"now", "write", "INSERT INTO t (name) VALUES (datetime('now'))", errcode.Policy, "datetime() is not allowed in a write in cluster mode: 'now' reads the node's clock"},
		{"NOW", "write", "INSERT INTO t (score) VALUES (julianday('NOW'))", errcode.Policy, "julianday()"},
		{"no time value", "write", "INSERT INTO t (name) VALUES (date())", errcode.Policy, "without a time value"},
		{"unixepoch no value", "write", "INSERT INTO t (score) VALUES (unixepoch())", errcode.Policy, "unixepoch()"},
		{"strftime format only", "write", "INSERT INTO t (name) VALUES (strftime('%Y'))", errcode.Policy, "strftime()"},
		{"strftime now", "write", "INSERT INTO t (name) VALUES (strftime('%Y', 'now'))", errcode.Policy, "'now'"},
		{"time now in comment-free CTE", "write", "WITH c(x) AS (SELECT time('now')) INSERT INTO t (name) SELECT x FROM c", errcode.Policy, "time()"},
		{"localtime", "write", "INSERT INTO t (name) VALUES (date('2026-01-01', 'localtime'))", errcode.Policy, "'localtime' reads the node's time zone"},
		{"utc", "write", "INSERT INTO t (name) VALUES (datetime('2026-01-01 10:00', 'UTC'))", errcode.Policy, "'utc'"},
		{"computed time value", "write", "UPDATE t SET name = date(name) WHERE id = 1", errcode.Policy, "computed while the statement runs"},
		{"concatenated now", "write", "INSERT INTO t (name) VALUES (date('n' || 'ow'))", errcode.Policy, "computed"},
		{"computed modifier", "write", "UPDATE t SET name = date('2026-01-01', name) WHERE id = 1", errcode.Policy, "computed"},
		{"CURRENT_TIMESTAMP", "write", "INSERT INTO t (name) VALUES (CURRENT_TIMESTAMP)", errcode.Policy, "CURRENT_TIMESTAMP is not allowed"},
		{"CURRENT_DATE", "write", "UPDATE t SET name = CURRENT_DATE WHERE id = 1", errcode.Policy, "CURRENT_DATE"},
		{"CURRENT_TIME", "write", "INSERT INTO t (name) VALUES (current_time)", errcode.Policy, "CURRENT_TIME"},
		{"default CURRENT_TIMESTAMP", "write", "INSERT INTO d (a) VALUES ('x')", errcode.Policy, "column at of d has it as its DEFAULT"},
		{"default datetime now", "write", "INSERT INTO e (id) VALUES (1)", errcode.Policy, "column at of e"},
		{"default random", "write", "INSERT INTO r DEFAULT VALUES", errcode.Policy, "column v of r"},
		{"random into a random-default column", "write", "INSERT INTO r (v) VALUES (random())", errcode.Policy, "random() is not allowed in a write in cluster mode: each node"},
		{"trigger reads the clock", "write", "INSERT INTO lg VALUES (1)", errcode.Policy, "in trigger lg_stamp"},
		{"view reads the clock", "write", "INSERT INTO t (name) SELECT n FROM clock", errcode.Policy, "datetime()"},
		{"second VALUES row", "write", "INSERT INTO t (name) VALUES (date('2026-01-01')), (date('now'))", errcode.Policy, "date()"},
		{"insert select", "write", "INSERT INTO t (name) SELECT datetime('now', '+1 day') FROM t", errcode.Policy, "datetime()"},
		{"upsert", "write", "INSERT INTO t (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = datetime('now')", errcode.Policy, "datetime()"},
		{"subquery", "write", "UPDATE t SET name = (SELECT strftime('%s', 'now')) WHERE id = 1", errcode.Policy, "strftime()"},
		{"inside other calls", "write", "INSERT INTO t (name) VALUES (json_object('at', CAST(coalesce(NULL, datetime('now')) AS TEXT)))", errcode.Policy, "datetime()"},
		{"aggregate", "write", "INSERT INTO t (score) SELECT max(julianday('now')) FROM t", errcode.Policy, "julianday()"},
		{"returning", "write", "INSERT INTO t (name) VALUES ('x') RETURNING datetime('now')", errcode.Policy, "datetime()"},
		{"create table as", "write", "CREATE TABLE snap AS SELECT datetime('now') AS at", errcode.Policy, "datetime()"},
		{"delete by the clock", "destructive", "DELETE FROM d WHERE at < datetime('now', '-30 days')", errcode.Policy, "datetime()"},
		{"literal then computed", "write", "UPDATE t SET name = date('2026-01-01') || date(name) WHERE id = 1", errcode.Policy, "computed"},
		{"last_insert_rowid", "write", "INSERT INTO t (score) VALUES (last_insert_rowid())", errcode.Policy, "last_insert_rowid()"},
		{"destructive random", "destructive", "DELETE FROM t WHERE id = abs(random()) % 3", errcode.Policy, "random()"},
		{"vacuum", "destructive", "VACUUM", errcode.Policy, "VACUUM"},
		{"vacuum into", "destructive", "VACUUM INTO '/tmp/judge-vacuum-into.db'", errcode.Policy, "VACUUM"},
		{"vacuum in read", "read", "VACUUM", errcode.ReadOnly, ""},
		{"attach", "destructive", "ATTACH 'other.db' AS o", errcode.Policy, "ATTACH"},
		{"detach", "destructive", "DETACH main", errcode.Policy, ""},
		{"trigger writing a protected table", "destructive", "CREATE TRIGGER t_bad AFTER INSERT ON t BEGIN INSERT INTO memory_events (content) VALUES ('x'); END", errcode.Protected, "memory_events"},
		{"trigger reading the clock", "destructive", "CREATE TRIGGER t_now AFTER UPDATE ON t BEGIN UPDATE t SET name = datetime('now') WHERE id = NEW.id; END", errcode.Policy, "CREATE TRIGGER t_now is not allowed in cluster mode: its body calls datetime(), and 'now' reads the node's clock"},
		{"trigger drawing random", "destructive", "CREATE TRIGGER t_rnd BEFORE DELETE ON t BEGIN INSERT INTO seq (v) VALUES (random()); END", errcode.Policy, "its body calls random()"},
		{"instead-of trigger reading the clock", "destructive", "CREATE TRIGGER n_ins INSTEAD OF INSERT ON names BEGIN INSERT INTO t (name) VALUES (date()); END", errcode.Policy, "n_ins"},
		// SPEC 4 as in every mode.
		{"protected", "write", "INSERT INTO memory_events (content) VALUES ('x')", errcode.Protected, "memory_events"},
		{"two statements", "write", "INSERT INTO t (name) VALUES ('x'); DELETE FROM t", errcode.MultipleStatements, ""},
		{"delete in write", "write", "DELETE FROM t", errcode.ReadOnly, "destructive_query"},
		{"write in read", "read", "INSERT INTO t (name) VALUES ('x')", errcode.ReadOnly, "write_query"},
		{"pragma write", "write", "PRAGMA journal_mode=DELETE", errcode.Policy, ""},

		// Look-alikes that must pass.
		{"columns named now and random", "write", "INSERT INTO k (now, random, nowhere) VALUES ('a', 1, 'b')", "", ""},
		{"the string now as a value", "write", "INSERT INTO t (name) VALUES ('now')", "", ""},
		{"nowhere", "write", "INSERT INTO t (name) VALUES ('nowhere')", "", ""},
		{"now in comments", "write", "/* datetime('now') */ INSERT INTO t (name) VALUES (date('2026-01-01')) -- random()", "", ""},
		{"date literal", "write", "INSERT INTO t (name) VALUES (date('2026-01-01', '+1 day', 'start of month'))", "", ""},
		{"strftime literal then julianday", "write", "INSERT INTO t (name, score) VALUES (strftime('%Y', '2026-01-01'), julianday('2026-01-01'))", "", ""},
		{"numbers", "write", "INSERT INTO t (name, score) VALUES (datetime(1700000000, 'unixepoch'), julianday(2460000.5))", "", ""},
		{"timediff literals", "write", "INSERT INTO t (name) VALUES (timediff('2026-01-02', '2026-01-01'))", "", ""},
		{"two literal dates", "write", "INSERT INTO t (name) VALUES (date('2026-01-01') || ' ' || time('10:00', '+1 hour')), (datetime('2026-01-01T10:00:00Z'))", "", ""},
		{"literal date in a clause", "destructive", "DELETE FROM d WHERE at < datetime('2026-01-01', '-30 days')", "", ""},
		{"index on a date expression", "write", "CREATE INDEX d_day ON d (date(at))", "", ""},
		{"default given", "write", "INSERT INTO d (a, at) VALUES ('x', '2026-12-04 10:00:00')", "", ""},
		{"default random given", "write", "INSERT INTO r (v) VALUES (7)", "", ""},
		{"date in CHECK, index and generated column", "write", "INSERT INTO days (at) VALUES ('2026-01-01')", "", ""},
		{"update under CHECK and index", "write", "UPDATE days SET at = '2026-02-01' WHERE id = 1", "", ""},
		{"select in write", "write", "SELECT random(), datetime('now')", "", ""},
		{"read may use the clock", "read", "SELECT datetime('now'), random() FROM t", "", ""},
		{"schema with clock default", "write", "CREATE TABLE z (a TEXT DEFAULT CURRENT_TIMESTAMP)", "", ""},
		{"destructive delete", "destructive", "DELETE FROM t WHERE id = 2", "", ""},
		{"trigger", "destructive", "CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN UPDATE t SET score = 0 WHERE id = NEW.id; INSERT INTO docs (body) VALUES (NEW.name); INSERT INTO seq (v) VALUES (NEW.id); END", "", ""},
		{"trigger with a literal date", "destructive", "CREATE TRIGGER t_day AFTER INSERT ON t BEGIN UPDATE t SET name = date('2026-01-01') WHERE id = NEW.id; END", "", ""},
		{"instead-of trigger", "destructive", "CREATE TRIGGER n_ins INSTEAD OF INSERT ON names BEGIN INSERT INTO t (name) VALUES (NEW.name); END", "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := execute(judgeRequest(db, tt.mode, tt.sql), hclog.NewNullLogger())
			if tt.code == "" {
				if !resp.OK || resp.Judgement == nil {
					t.Fatalf("refused: %s: %s", resp.Code, resp.Message)
				}
				return
			}
			if resp.OK {
				t.Fatalf("judged ok (%+v), want %s", resp.Judgement, tt.code)
			}
			if resp.Code != tt.code || !strings.Contains(resp.Message, tt.want) {
				t.Fatalf("got %s: %s\nwant %s containing %q", resp.Code, resp.Message, tt.code, tt.want)
			}
		})
	}
}

// TestJudgeNotCluster: without Cluster, only SPEC 4 applies: a write
// with random() or a clock default is judged fine.
func TestJudgeNotCluster(t *testing.T) {
	db := judgeDB(t)
	for _, sql := range []string{"INSERT INTO t (score) VALUES (random())", "INSERT INTO d (a) VALUES ('x')",
		"CREATE TRIGGER t_now AFTER UPDATE ON t BEGIN UPDATE t SET name = datetime('now') WHERE id = NEW.id; END"} {
		req := judgeRequest(db, "destructive", sql)
		req.Cluster = false
		if resp := execute(req, hclog.NewNullLogger()); !resp.OK {
			t.Fatalf("%s: %s: %s", sql, resp.Code, resp.Message)
		}
	}
	// The policy over a trigger's body holds in every judge.
	req := judgeRequest(db, "destructive", "CREATE TRIGGER t_bad AFTER INSERT ON t BEGIN INSERT INTO memory_events (content) VALUES ('x'); END")
	req.Cluster = false
	if resp := execute(req, hclog.NewNullLogger()); resp.OK || resp.Code != errcode.Protected {
		t.Fatalf("trigger writing memory_events: %+v", resp)
	}
}

// TestJudgement: what the answer says, and the text exactly as judged.
func TestJudgement(t *testing.T) {
	db := judgeDB(t)
	version := schemaVersion(t, db)
	tests := []struct {
		mode         ipc.Mode
		sql, text    string
		reads, schem bool
		tables       string
		flags        string // inserts, update_guard, returning
	}{
		{"write", "  INSERT INTO t (name) VALUES ('x') ;  -- done\n", "INSERT INTO t (name) VALUES ('x') ;", false, false, "", ""},
		{"write", "\tINSERT INTO t (name) VALUES ('x')", "INSERT INTO t (name) VALUES ('x')", false, false, "", ""},
		{"write", "INSERT INTO t (name) VALUES ('x') -- why", "INSERT INTO t (name) VALUES ('x') -- why\n", false, false, "", ""},
		{"write", "INSERT INTO t (name) VALUES ('a;b');;", "INSERT INTO t (name) VALUES ('a;b');", false, false, "", ""},
		{"write", "SELECT count(*) FROM t", "SELECT count(*) FROM t", true, false, "", ""},
		{"write", "CREATE INDEX t_name ON t(name)", "CREATE INDEX t_name ON t(name)", false, true, "", ""},
		{"write", "EXPLAIN INSERT INTO t (name) VALUES ('x')", "EXPLAIN INSERT INTO t (name) VALUES ('x')", true, false, "", ""},
		{"destructive", "DELETE FROM t WHERE id = 1", "DELETE FROM t WHERE id = 1", false, false, "t", ""},
		{"destructive", "DROP TABLE k", "DROP TABLE k", false, true, "k", ""},
		{"destructive", "ALTER TABLE k ADD COLUMN extra", "ALTER TABLE k ADD COLUMN extra", false, true, "k", ""},
		{"destructive", "INSERT INTO lg VALUES (1)", "", false, false, "", ""}, // refused: its trigger reads the clock
		{"write", "UPDATE t SET score = 1", "UPDATE t SET score = 1", false, false, "", "update_guard"},
		{"destructive", "UPDATE t SET score = 1", "UPDATE t SET score = 1", false, false, "t", ""},
		{"write", "INSERT INTO t (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = 'y' RETURNING id", "INSERT INTO t (id, name) VALUES (1, 'x') ON CONFLICT (id) DO UPDATE SET name = 'y' RETURNING id", false, false, "", "inserts returning"},
	}
	for _, tt := range tests {
		resp := execute(judgeRequest(db, tt.mode, tt.sql), hclog.NewNullLogger())
		if tt.text == "" {
			if resp.OK {
				t.Fatalf("%q judged ok", tt.sql)
			}
			continue
		}
		if !resp.OK {
			t.Fatalf("%q: %s: %s", tt.sql, resp.Code, resp.Message)
		}
		j := resp.Judgement
		if tt.flags == "" && strings.HasPrefix(strings.TrimSpace(tt.sql), "INSERT") {
			tt.flags = "inserts"
		}
		var flags []string
		for _, f := range []struct {
			on   bool
			name string
		}{{j.Inserts, "inserts"}, {j.UpdateGuard, "update_guard"}, {j.Returning, "returning"}} {
			if f.on {
				flags = append(flags, f.name)
			}
		}
		if j.SQL != tt.text || j.Reads != tt.reads || j.Schema != tt.schem || j.SchemaVersion != version || strings.Join(j.Tables, ",") != tt.tables || strings.Join(flags, " ") != tt.flags {
			t.Errorf("%q: got %+v, want text %q reads %v schema %v version %d tables %q flags %q", tt.sql, *j, tt.text, tt.reads, tt.schem, version, tt.tables, tt.flags)
		}
	}
}

func schemaVersion(t *testing.T, db string) int64 {
	t.Helper()
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	st, _, err := c.Prepare("PRAGMA schema_version")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Finalize()
	if ok, err := st.Step(); !ok || err != nil {
		t.Fatal(err)
	}
	return st.ColumnInt64(0)
}

// fileState is what a judge must leave as it was.
type fileState struct {
	size, walSize int64
	mtime         int64
	schema        string
	rows          int64
}

func stateOf(t *testing.T, db string) fileState {
	t.Helper()
	var s fileState
	fi, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	s.size, s.mtime = fi.Size(), fi.ModTime().UnixNano()
	if wi, err := os.Stat(db + "-wal"); err == nil {
		s.walSize = wi.Size()
	}
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	for _, q := range []string{"SELECT group_concat(type || name || coalesce(sql, ''), '|') FROM sqlite_schema", "SELECT (SELECT count(*) FROM t) * 1000 + (SELECT count(*) FROM d)"} {
		st, _, err := c.Prepare(q)
		if err != nil {
			t.Fatal(err)
		}
		if ok, err := st.Step(); !ok || err != nil {
			t.Fatal(err)
		}
		if s.schema == "" {
			s.schema = st.ColumnText(0)
		} else {
			s.rows = st.ColumnInt64(0)
		}
		st.Finalize()
	}
	return s
}

// TestJudgeChangesNothing: writes, schema changes and destructive
// statements judged (not run): the file, its WAL, schema and rows as
// before.
func TestJudgeChangesNothing(t *testing.T) {
	db := judgeDB(t)
	before := stateOf(t, db)
	for _, c := range []struct {
		mode ipc.Mode
		sql  string
	}{
		{"write", "INSERT INTO t (name) VALUES ('x')"},
		{"write", "UPDATE t SET score = 0"},
		{"write", "CREATE TABLE new_one (a)"},
		{"destructive", "DELETE FROM t"},
		{"destructive", "DROP TABLE d"},
		{"destructive", "INSERT INTO d (a, at) VALUES ('x', '2026-01-01')"},
		{"destructive", "CREATE TRIGGER t_ins AFTER INSERT ON t BEGIN INSERT INTO docs (body) VALUES (NEW.name); END"},
	} {
		if resp := execute(judgeRequest(db, c.mode, c.sql), hclog.NewNullLogger()); !resp.OK {
			t.Fatalf("%s: %s: %s", c.sql, resp.Code, resp.Message)
		}
		// Also without ReadOnlyFile: the judge's connection is query_only.
		req := judgeRequest(db, c.mode, c.sql)
		req.ReadOnlyFile = false
		if resp := execute(req, hclog.NewNullLogger()); !resp.OK {
			t.Fatalf("%s (read-write file): %s: %s", c.sql, resp.Code, resp.Message)
		}
	}
	if after := stateOf(t, db); after != before {
		t.Fatalf("the judge changed the file:\nbefore %+v\nafter  %+v", before, after)
	}
}

// TestJudgeWhileWritten: the node's file opened read-only while another
// connection writes it (as rqlited does): the judge sees each committed
// schema, and works while a write transaction is open.
func TestJudgeWhileWritten(t *testing.T) {
	db := judgeDB(t)
	w, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Exec("CREATE TABLE later (a)"); err != nil {
		t.Fatal(err)
	}
	resp := execute(judgeRequest(db, "write", "INSERT INTO later (a) VALUES (1)"), hclog.NewNullLogger())
	if !resp.OK || resp.Judgement.SchemaVersion != schemaVersion(t, db) {
		t.Fatalf("after another connection's CREATE TABLE: %s %s %+v", resp.Code, resp.Message, resp.Judgement)
	}
	if err := w.Exec("BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	if err := w.Exec("INSERT INTO later (a) VALUES (2)"); err != nil {
		t.Fatal(err)
	}
	resp = execute(judgeRequest(db, "write", "INSERT INTO later (a) VALUES (3)"), hclog.NewNullLogger())
	if !resp.OK {
		t.Fatalf("while another connection holds a write transaction: %s %s", resp.Code, resp.Message)
	}
	read := request(db, ipc.OpQuery, "read", "SELECT count(*) AS n FROM later")
	read.ReadOnlyFile, read.Cluster = true, true
	if resp := execute(read, hclog.NewNullLogger()); !resp.OK || resp.Text != "n\n0\n# 1 rows" {
		t.Fatalf("read beside the open write: %s %s %q", resp.Code, resp.Message, resp.Text)
	}
	if err := w.Exec("COMMIT"); err != nil {
		t.Fatal(err)
	}
	if resp := execute(read, hclog.NewNullLogger()); !resp.OK || resp.Text != "n\n1\n# 1 rows" {
		t.Fatalf("read after the commit: %s %s %q", resp.Code, resp.Message, resp.Text)
	}
	// A cluster's worker never writes: a write request must be a judge.
	write := request(db, ipc.OpQuery, "write", "INSERT INTO later (a) VALUES (4)")
	write.Cluster = true
	if resp := execute(write, hclog.NewNullLogger()); resp.OK || resp.Code != errcode.InvalidArgument {
		t.Fatalf("a cluster write without judge: %+v", resp)
	}
}

// BenchmarkJudge is the worker's share of judging a write for a cluster
// (open read-only, read transaction, compile, the program read for the
// checks), beside BenchmarkJudgeYardstick, the same INSERT run and
// committed on a single file.
func BenchmarkJudge(b *testing.B) {
	db := judgeDB(&testing.T{})
	req := judgeRequest(db, "write", "INSERT INTO t (name, score) VALUES ('x', 1.5)")
	log := hclog.NewNullLogger()
	b.ReportAllocs()
	for b.Loop() {
		if resp := execute(req, log); !resp.OK {
			b.Fatal(resp.Message)
		}
	}
}

func BenchmarkJudgeYardstick(b *testing.B) {
	db := judgeDB(&testing.T{})
	req := request(db, ipc.OpQuery, "write", "INSERT INTO t (name, score) VALUES ('x', 1.5)")
	log := hclog.NewNullLogger()
	b.ReportAllocs()
	for b.Loop() {
		if resp := execute(req, log); !resp.OK {
			b.Fatal(resp.Message)
		}
	}
}
