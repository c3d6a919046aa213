package tests

import (
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestToolsAndAnnotations reads tools/list as a host does: every tool has a
// title and honest hints (destructive when it may overwrite or remove
// data), and a closed input schema.
func TestToolsAndAnnotations(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t), "--max-rows", "300")
	res, err := s.c.ListTools(t.Context(), mcpListTools())
	if err != nil {
		t.Fatal(err)
	}
	type hints struct{ readOnly, destructive bool }
	want := map[string]hints{
		"read_query": {true, false}, "write_query": {false, true}, "destructive_query": {false, true}, "list_tables": {true, false},
		"describe_table": {true, false}, "get_schema": {true, false}, "create_view": {false, true}, "append_event": {false, false},
		"verify_chain": {true, false}, "checkpoint": {false, false}, "get_resume_context": {true, false}, "search_text": {true, false},
		"snapshot": {false, false}, "recall": {true, false},
	}
	if len(res.Tools) != 14 || len(want) != 14 {
		t.Fatalf("got %d tools, want %d", len(res.Tools), len(want))
	}
	for _, tool := range res.Tools {
		w, ok := want[tool.Name]
		if !ok {
			t.Errorf("unexpected tool %s", tool.Name)
			continue
		}
		a := tool.Annotations
		if a.ReadOnlyHint == nil || *a.ReadOnlyHint != w.readOnly || a.OpenWorldHint == nil || *a.OpenWorldHint || a.DestructiveHint == nil || a.IdempotentHint == nil {
			t.Errorf("%s: annotations %+v", tool.Name, a)
			continue
		}
		if *a.DestructiveHint != w.destructive {
			t.Errorf("%s: destructiveHint %v, want %v", tool.Name, *a.DestructiveHint, w.destructive)
		}
		if tool.Title == "" || a.Title != tool.Title {
			t.Errorf("%s: title %q, annotations.title %q", tool.Name, tool.Title, a.Title)
		}
		if tool.InputSchema.AdditionalProperties != false {
			t.Errorf("%s: additionalProperties %v, want false", tool.Name, tool.InputSchema.AdditionalProperties)
		}
		if len(tool.Description) < 60 {
			t.Errorf("%s: description too thin for an agent: %q", tool.Name, tool.Description)
		}
	}
	// The bounds come from the live configuration.
	for _, tool := range res.Tools {
		if tool.Name == "read_query" {
			limit, _ := tool.InputSchema.Properties["limit"].(map[string]any)
			if limit["minimum"] != 1.0 || limit["maximum"] != 300.0 || limit["default"] != 100.0 {
				t.Errorf("read_query limit schema %v, want minimum 1, maximum 300 (--max-rows), default 100", limit)
			}
		}
	}
}

func TestReadWriteRoundTrip(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	if got := s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, score REAL, note TEXT, data BLOB)")); got != "ok: schema statement executed" {
		t.Fatalf("create: %q", got)
	}
	got := s.ok("write_query", q(`INSERT INTO t (name, score, note, data) VALUES ('a,b', 2, NULL, x'0102'), ('say "hi"', 0.1, '', NULL), ('line1
line2', 1e16, 'x', zeroblob(10))`))
	if got != "ok: 3 rows affected (last_insert_rowid=3)" {
		t.Fatalf("insert: %q", got)
	}
	csv := s.ok("read_query", q("SELECT * FROM t ORDER BY id"))
	want := "id,name,score,note,data\n" +
		"1,\"a,b\",2.0,,<blob 2 bytes>\n" +
		"2,\"say \"\"hi\"\"\",0.1,\"\",\n" +
		"3,\"line1\nline2\",1e+16,x,<blob 10 bytes>\n" +
		"# 3 rows"
	if csv != want {
		t.Fatalf("csv:\n%s\nwant:\n%s", csv, want)
	}
	got = s.ok("write_query", q("UPDATE t SET score = score + 1 WHERE id = 1 RETURNING id, score"))
	if got != "ok: 1 rows affected\nid,score\n1,3.0\n# 1 rows" {
		t.Fatalf("update returning: %q", got)
	}
	// Paging: the trailer tells the next offset.
	got = s.ok("read_query", map[string]any{"query": "SELECT id FROM t ORDER BY id", "limit": 2})
	if !strings.HasSuffix(got, "# 2 rows, truncated by limit=2 (more rows exist; raise limit up to 1000, use offset=2, or narrow the query)") {
		t.Fatalf("limit trailer: %q", got)
	}
	got = s.ok("read_query", map[string]any{"query": "SELECT id FROM t ORDER BY id", "limit": 2, "offset": 2})
	if got != "id\n3\n# 1 rows" {
		t.Fatalf("offset page: %q", got)
	}
	got = s.ok("read_query", map[string]any{"query": "SELECT id, name FROM t WHERE id = 1", "format": "json"})
	if got != `{"columns":["id","name"],"rows":[[1,"a,b"]],"returnedRows":1,"limit":100,"offset":0,"hasMore":false}` {
		t.Fatalf("json: %q", got)
	}
	if got := s.ok("read_query", q("PRAGMA table_info(t)")); !strings.HasPrefix(got, "cid,name,type,notnull,dflt_value,pk\n0,id,INTEGER,0,,1\n") {
		t.Fatalf("pragma: %q", got)
	}
	if got := s.ok("read_query", q("PRAGMA journal_mode")); got != "journal_mode\nwal\n# 1 rows" {
		t.Fatalf("setting read: %q", got)
	}
	if got := s.ok("read_query", q("EXPLAIN QUERY PLAN SELECT * FROM t WHERE id = 1")); !strings.Contains(got, "SEARCH t USING INTEGER PRIMARY KEY") {
		t.Fatalf("explain: %q", got)
	}
}

func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	tests := []struct {
		tool string
		args map[string]any
		want string
	}{
		{"read_query", map[string]any{}, "query is required"},
		{"read_query", q("   "), "query must not be empty"},
		{"read_query", map[string]any{"query": 42}, "query must be a string"},
		{"read_query", map[string]any{"query": "SELECT 1", "limit": 0}, "limit must be an integer from 1 to 1000"},
		{"read_query", map[string]any{"query": "SELECT 1", "limit": 1001}, "limit must be an integer from 1 to 1000"},
		{"read_query", map[string]any{"query": "SELECT 1", "limit": 2.5}, "limit must be an integer"},
		{"read_query", map[string]any{"query": "SELECT 1", "offset": -1}, "offset must be an integer from 0"},
		{"read_query", map[string]any{"query": "SELECT 1", "format": "xml"}, "format must be"},
		{"read_query", map[string]any{"sql": "SELECT 1"}, "unknown argument sql"},
		{"destructive_query", q("DELETE FROM x"), "reason is required"},
		{"create_view", map[string]any{"name": "1bad", "select_sql": "SELECT 1"}, "must match"},
		{"append_event", map[string]any{"content": " \n\t "}, "content must not be empty"},
		{"get_resume_context", map[string]any{"exclude_kinds": 3}, "exclude_kinds must be an array of strings or one comma-separated string, got a number"},
		{"list_tables", map[string]any{"include_row_counts": "yes"}, "must be true or false"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+"/"+tt.want, func(t *testing.T) {
			text := s.fails(tt.tool, tt.args, "INVALID_ARGUMENT")
			if !strings.Contains(text, tt.want) {
				t.Fatalf("got %q, want it to contain %q", text, tt.want)
			}
		})
	}
	s.audited(s.db)
	if _, failed := auditRows(t, s.db); failed != len(tests) {
		t.Fatalf("audit has %d failed rows, want %d", failed, len(tests))
	}
}

// TestRefusals covers every refusal class of SPEC 4; after each, the user
// tables, the memory tables and the schema are unchanged, and no file
// appeared next to the database.
func TestRefusals(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, v TEXT)"))
	s.ok("write_query", q("INSERT INTO t (v) VALUES ('a'), ('b')"))
	s.ok("write_query", q("CREATE VIRTUAL TABLE docs USING fts5(body)"))
	s.ok("write_query", q("INSERT INTO docs (body) VALUES ('hello world')"))
	s.ok("append_event", map[string]any{"content": "first"})
	s.ok("checkpoint", map[string]any{"summary": "state"})

	tests := []struct {
		name, tool, sql, code, msg string
	}{
		{"insert in read_query", "read_query", "INSERT INTO t (v) VALUES ('x')", "READ_ONLY_VIOLATION", "use write_query"},
		{"update in read_query via CTE", "read_query", "WITH x AS (SELECT 1) UPDATE t SET v = 'x'", "READ_ONLY_VIOLATION", ""},
		{"create in read_query", "read_query", "CREATE TABLE u (a)", "READ_ONLY_VIOLATION", ""},
		{"delete in write_query", "write_query", "DELETE FROM t", "READ_ONLY_VIOLATION", "use destructive_query"},
		{"delete disguised by comment", "write_query", "/* harmless */ DeLeTe -- really\n FROM t", "READ_ONLY_VIOLATION", "destructive_query"},
		{"drop in write_query", "write_query", "DROP TABLE t", "READ_ONLY_VIOLATION", "destructive_query"},
		{"alter in write_query", "write_query", "ALTER TABLE t ADD COLUMN w", "READ_ONLY_VIOLATION", "destructive_query"},
		{"trigger in write_query", "write_query", "CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1; END", "READ_ONLY_VIOLATION", "destructive_query"},
		{"view in write_query", "write_query", "CREATE VIEW v AS SELECT 1", "POLICY_VIOLATION", "create_view"},
		{"view in destructive_query", "destructive_query", "CREATE VIEW v AS SELECT 1", "POLICY_VIOLATION", "create_view"},
		{"attach", "read_query", "ATTACH 'other.db' AS o", "POLICY_VIOLATION", "ATTACH"},
		{"attach destructive", "destructive_query", "ATTACH 'other.db' AS o", "POLICY_VIOLATION", "ATTACH"},
		{"detach", "destructive_query", "DETACH main", "POLICY_VIOLATION", ""},
		{"begin", "write_query", "BEGIN", "POLICY_VIOLATION", ""},
		{"commit", "destructive_query", "COMMIT", "POLICY_VIOLATION", ""},
		{"savepoint", "write_query", "SAVEPOINT a", "POLICY_VIOLATION", ""},
		{"pragma write", "destructive_query", "PRAGMA journal_mode = DELETE", "POLICY_VIOLATION", ""},
		{"pragma writable_schema", "destructive_query", "PRAGMA writable_schema = 1", "POLICY_VIOLATION", ""},
		{"pragma empty value", "read_query", "PRAGMA journal_mode = ''", "POLICY_VIOLATION", "setting"},
		{"pragma empty value destructive", "destructive_query", "PRAGMA user_version = ''", "POLICY_VIOLATION", "setting"},
		{"unknown pragma", "read_query", "PRAGMA no_such_pragma", "POLICY_VIOLATION", ""},
		{"temp table", "write_query", "CREATE TEMP TABLE x (a)", "POLICY_VIOLATION", ""},
		{"temp trigger", "destructive_query", "CREATE TEMP TRIGGER x AFTER INSERT ON t BEGIN SELECT 1; END", "POLICY_VIOLATION", ""},
		{"load_extension", "read_query", "SELECT load_extension('/tmp/evil')", "POLICY_VIOLATION", ""},
		{"vacuum", "destructive_query", "VACUUM", "POLICY_VIOLATION", "VACUUM"},
		{"vacuum into", "destructive_query", "VACUUM INTO 'copy.db'", "POLICY_VIOLATION", "VACUUM"},
		{"vacuum into read", "read_query", "VACUUM INTO 'copy2.db'", "", ""},
		{"sqlite_sequence", "destructive_query", "UPDATE sqlite_sequence SET seq = 100", "POLICY_VIOLATION", ""},
		{"sqlite_sequence delete", "destructive_query", "DELETE FROM sqlite_sequence", "POLICY_VIOLATION", ""},
		{"sqlite_dbpage", "destructive_query", "INSERT INTO sqlite_dbpage (pgno, data) VALUES (1, zeroblob(4096))", "", ""},
		{"sqlite_master", "destructive_query", "UPDATE sqlite_master SET sql = 'x'", "", ""},
		{"fts shadow write", "destructive_query", "DELETE FROM docs_data", "", ""},
		{"fts4 module", "write_query", "CREATE VIRTUAL TABLE f4 USING fts4(x)", "", ""},
		{"other module", "write_query", "CREATE VIRTUAL TABLE s USING dbstat", "POLICY_VIOLATION", ""},
		{"insert memory_events", "write_query", "INSERT INTO memory_events (ts, session, kind, content, prev_hash, hash) VALUES ('a','b','c','d','e','f')", "PROTECTED_TABLE", "memory_events is managed by the server"},
		{"update query_log", "write_query", "UPDATE query_log SET ok = 1", "PROTECTED_TABLE", "query_log"},
		{"delete checkpoints", "destructive_query", "DELETE FROM memory_checkpoints", "PROTECTED_TABLE", "memory_checkpoints"},
		{"drop query_log", "destructive_query", "DROP TABLE query_log", "PROTECTED_TABLE", ""},
		{"drop query_errors", "destructive_query", "DROP VIEW query_errors", "PROTECTED_TABLE", ""},
		{"rename memory_events", "destructive_query", "ALTER TABLE memory_events RENAME TO old", "PROTECTED_TABLE", ""},
		{"index on memory_events", "write_query", "CREATE INDEX ev_kind ON memory_events(kind)", "PROTECTED_TABLE", ""},
		{"trigger on memory_events", "destructive_query", "CREATE TRIGGER ev AFTER INSERT ON memory_events BEGIN SELECT 1; END", "PROTECTED_TABLE", ""},
		{"drop append-only trigger", "destructive_query", "DROP TRIGGER memory_events_no_update", "PROTECTED_TABLE", ""},
		{"trigger body writes protected", "destructive_query", "CREATE TRIGGER sneaky AFTER INSERT ON t BEGIN DELETE FROM memory_events; END", "PROTECTED_TABLE", ""},
		{"multiple statements", "read_query", "SELECT 1; DELETE FROM t", "MULTIPLE_STATEMENTS", "one statement"},
		{"multiple writes", "write_query", "INSERT INTO t (v) VALUES ('x'); INSERT INTO t (v) VALUES ('y')", "MULTIPLE_STATEMENTS", ""},
		{"trailing garbage", "read_query", "SELECT 1; garbage", "MULTIPLE_STATEMENTS", ""},
		{"sql error", "read_query", "SELECT * FROM nope", "SQL_ERROR", "no such table: nope"},
	}
	memTables := []string{"memory_events", "memory_checkpoints"}
	userTables := []string{"t", "docs"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			beforeUser := dump(t, db, userTables...)
			beforeMem := dump(t, db, memTables...)
			s.audited(db)
			beforeAudit, _ := auditRows(t, db)
			args := q(tt.sql)
			if tt.tool == "destructive_query" {
				args["reason"] = "test"
			}
			text, isErr := s.call(tt.tool, args)
			if !isErr {
				t.Fatalf("%s was allowed: %q", tt.sql, text)
			}
			if tt.code != "" && !strings.HasPrefix(text, tt.code+": ") {
				t.Fatalf("got %q, want code %s", text, tt.code)
			}
			if tt.msg != "" && !strings.Contains(text, tt.msg) {
				t.Fatalf("got %q, want it to mention %q", text, tt.msg)
			}
			if dump(t, db, userTables...) != beforeUser {
				t.Fatal("user tables changed")
			}
			if dump(t, db, memTables...) != beforeMem {
				t.Fatal("memory tables changed")
			}
			s.audited(db)
			after, _ := auditRows(t, db)
			if after != beforeAudit+1 {
				t.Fatalf("audit rows %d -> %d, want one more", beforeAudit, after)
			}
			if tool, ok, _ := lastAudit(t, db); tool != tt.tool || ok {
				t.Fatalf("audit row: tool %s ok %v", tool, ok)
			}
		})
	}
	// Nothing an agent sent wrote a file beside the database.
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n := e.Name()
		if n != "memory.db" && n != "memory.db-wal" && n != "memory.db-shm" && n != "memory.snapshots" {
			t.Errorf("unexpected file %s", n)
		}
	}
	for _, f := range []string{"other.db", "copy.db", "copy2.db"} {
		if _, err := os.Stat(f); err == nil {
			t.Errorf("%s was created in the working folder", f)
		}
	}
}

func TestUpdateGuardAndDestructive(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	s := start(t, db, "--max-update-rows", "5", "--snapshots", "2")
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v INTEGER)"))
	s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10) INSERT INTO t (v) SELECT x FROM c"))
	text := s.fails("write_query", q("UPDATE t SET v = v + 1"), "POLICY_VIOLATION")
	if !strings.Contains(text, "would change 10 rows, more than --max-update-rows=5") || !strings.Contains(text, "rolled back") {
		t.Fatalf("guard: %q", text)
	}
	if got := s.ok("read_query", q("SELECT sum(v) FROM t")); got != "sum(v)\n55\n# 1 rows" {
		t.Fatalf("the guarded update changed rows: %q", got)
	}
	if got := s.ok("write_query", q("UPDATE t SET v = v + 1 WHERE id <= 5")); got != "ok: 5 rows affected" {
		t.Fatalf("small update: %q", got)
	}
	// An upsert is not a pure UPDATE: no guard.
	s.ok("write_query", q("INSERT INTO t (id, v) SELECT id, 0 FROM t WHERE true ON CONFLICT(id) DO UPDATE SET v = excluded.v"))

	var snaps []string
	for i := range 3 {
		text := s.ok("destructive_query", map[string]any{"query": "DELETE FROM t WHERE id = " + strconv.Itoa(i+1), "reason": "cleanup"})
		prefix := "ok: 1 rows affected; snapshot: "
		if !strings.HasPrefix(text, prefix) {
			t.Fatalf("destructive: %q", text)
		}
		snaps = append(snaps, strings.TrimPrefix(text, prefix))
		time.Sleep(5 * time.Millisecond) // distinct millisecond stamps
	}
	snapDir := filepath.Join(dir, "memory.snapshots")
	entries, err := os.ReadDir(snapDir)
	if err != nil || len(entries) != 2 {
		t.Fatalf("snapshot folder: %v, %d files, want the newest 2", err, len(entries))
	}
	if _, err := os.Stat(snaps[0]); !os.IsNotExist(err) {
		t.Fatalf("oldest snapshot was kept: %v", err)
	}
	// The newest snapshot holds the state before the last delete.
	if got := dump(t, snaps[2], "t"); got == dump(t, db, "t") {
		t.Fatal("snapshot equals the state after the delete")
	}
	if got := s.ok("destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "done"}); !strings.HasPrefix(got, "ok: schema statement executed; snapshot: ") {
		t.Fatalf("drop: %q", got)
	}
	s.audited(db)
	var reason string
	if err := openDirect(t, db).QueryRow(`SELECT json_extract(detail, '$.reason') FROM query_log WHERE tool = 'destructive_query' ORDER BY id DESC LIMIT 1`).Scan(&reason); err != nil || reason != "done" {
		t.Fatalf("reason in audit: %q %v", reason, err)
	}
}

func TestSnapshotsDisabled(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t), "--snapshots", "0")
	s.ok("write_query", q("CREATE TABLE t (a)"))
	if got := s.ok("destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "x"}); got != "ok: schema statement executed; snapshots are disabled" {
		t.Fatalf("got %q", got)
	}
}

func TestRunawayQueryIsStopped(t *testing.T) {
	// Not parallel: it bounds how soon the query is stopped, which other tests on the 2 cores would skew.
	db := newDB(t)
	s := start(t, db, "--query-timeout", "1")
	// The bound is the 1 s budget plus a slack of 1 s, or of four trivial
	// calls where the machine is so loaded that one takes longer than a
	// quarter second: what a call costs now, measured in the same run, so
	// a loaded machine stretches both sides (BenchmarkRunawayStop measures
	// the real margin: tens of milliseconds on a quiet machine).
	var call time.Duration
	for range 3 {
		t0 := time.Now()
		s.ok("read_query", q("SELECT 1"))
		call = max(call, time.Since(t0))
	}
	bound := time.Second + max(time.Second, 4*call)
	start := time.Now()
	text := s.fails("read_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"), "TIMEOUT")
	if d := time.Since(start); d > bound {
		t.Errorf("stopped after %s, want within %s (1s budget; a trivial call took %s)", d, bound, call)
	}
	if !strings.Contains(text, "query stopped after 1s") {
		t.Fatalf("timeout text: %q", text)
	}
	if got := s.ok("read_query", q("SELECT 42 AS answer")); got != "answer\n42\n# 1 rows" {
		t.Fatalf("after timeout: %q", got)
	}
	s.audited(db)
	if tool, ok, e := lastAuditN(t, db, 2); tool != "read_query" || ok || !strings.HasPrefix(e, "TIMEOUT") {
		t.Fatalf("audit of the timeout: %s %v %q", tool, ok, e)
	}
}

func TestMemoryBomb(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--query-timeout", "5", "--worker-memory-mb", "256")
	bombs := []string{
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 2000) SELECT length(group_concat(randomblob(1000000))) FROM c",
		"WITH RECURSIVE c(x, s) AS (SELECT 1, 'x' UNION ALL SELECT x + 1, s || s FROM c WHERE x < 40) SELECT max(length(s)) FROM c",
		"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) SELECT count(*) FROM (SELECT randomblob(100000) AS b FROM c ORDER BY b)",
	}
	for _, bomb := range bombs {
		text, isErr := s.call("read_query", q(bomb))
		if !isErr || !(strings.HasPrefix(text, "RESOURCE_LIMIT: ") || strings.HasPrefix(text, "TIMEOUT: ")) {
			t.Fatalf("bomb %q: got (error=%v) %q", bomb, isErr, text)
		}
		if got := s.ok("read_query", q("SELECT 1 AS still")); got != "still\n1\n# 1 rows" {
			t.Fatalf("after bomb: %q", got)
		}
	}
	s.audited(db)
	_, failed := auditRows(t, db)
	if failed != len(bombs) {
		t.Fatalf("audit has %d failed rows, want %d", failed, len(bombs))
	}
}

// TestTemporaryDataLimit: a sort that spills more than the worker's
// file-size limit gets RESOURCE_LIMIT with how to narrow it (SQLite says
// only "disk I/O error"), and the server goes on serving.
func TestTemporaryDataLimit(t *testing.T) {
	t.Parallel()
	if runtime.GOOS != "linux" {
		t.Skip("the worker's file-size limit (RLIMIT_FSIZE) exists on Linux only; a Job Object has none")
	}
	db := newDB(t)
	s := start(t, db, "--max-growth-mb", "1")
	text := s.fails("read_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) SELECT count(*) FROM (SELECT randomblob(100000) AS b FROM c ORDER BY b)"), "RESOURCE_LIMIT")
	for _, want := range []string{"temporary data", "--max-growth-mb=1", "LIMIT"} {
		if !strings.Contains(text, want) {
			t.Errorf("error %q does not say %q", bounded(text), want)
		}
	}
	if got := s.ok("read_query", q("SELECT 1 AS still")); got != "still\n1\n# 1 rows" {
		t.Fatalf("after the sort: %q", got)
	}
}

// TestKilledWriteLeavesNoTrace kills the worker with SIGKILL in the middle
// of a large write: the database stays intact and holds no partial rows.
func TestKilledWriteLeavesNoTrace(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--query-timeout", "30", "--standby-workers", "0")
	s.ok("write_query", q("CREATE TABLE big (id INTEGER PRIMARY KEY, pad TEXT)"))
	s.ok("write_query", q("INSERT INTO big (pad) VALUES ('committed')"))
	// The last call's worker may still be exiting (under load it was,
	// and was found below and "killed" after it had finished).
	mustWaitFor(t, "the last call's worker to exit", func() bool { return findWorker(t, s) == 0 })
	done := make(chan string, 1)
	go func() {
		text, _ := s.call("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50000000) INSERT INTO big (pad) SELECT printf('%.500c', 'x') FROM c"))
		done <- text
	}()
	var pid int
	deadline := time.Now().Add(20 * time.Second)
	for pid == 0 && time.Now().Before(deadline) {
		pid = findWorker(t, s)
		time.Sleep(20 * time.Millisecond)
	}
	if pid == 0 {
		t.Fatal("no worker found")
	}
	time.Sleep(700 * time.Millisecond) // well into the write
	p, _ := os.FindProcess(pid)
	if err := p.Kill(); err != nil {
		t.Fatal(err)
	}
	text := <-done
	if !strings.HasPrefix(text, "WORKER_FAILED: ") && !strings.HasPrefix(text, "RESOURCE_LIMIT: ") {
		t.Fatalf("killed worker answered %q", text)
	}
	if got := s.ok("read_query", q("PRAGMA integrity_check")); got != "integrity_check\nok\n# 1 rows" {
		t.Fatalf("integrity: %q", got)
	}
	if got := s.ok("read_query", q("SELECT count(*) AS n FROM big")); got != "n\n1\n# 1 rows" {
		t.Fatalf("partial rows: %q", got)
	}
}
