package policy

import (
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // database/sql for building templates and checking results

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// templates are built once in TestMain and copied for every case, so each
// statement runs on a fresh file whose bytes can be compared afterwards.
var templates struct {
	full  string // SPEC 5 server objects plus agent tables, FTS5, R*Tree, triggers
	empty string // one plain table: no sqlite_sequence or sqlite_stat1 yet
}

// fullSchema is SPEC 5's DDL followed by agent objects the cases need.
var fullSchema = []string{
	`CREATE TABLE memory_events(id INTEGER PRIMARY KEY, ts TEXT NOT NULL, session TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'note', content TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE)`,
	`CREATE TRIGGER memory_events_no_update BEFORE UPDATE ON memory_events BEGIN SELECT RAISE(ABORT, 'memory_events is append-only'); END`,
	`CREATE TRIGGER memory_events_no_delete BEFORE DELETE ON memory_events BEGIN SELECT RAISE(ABORT, 'memory_events is append-only'); END`,
	`CREATE TABLE memory_checkpoints(id INTEGER PRIMARY KEY, ts TEXT NOT NULL, session TEXT NOT NULL, summary TEXT NOT NULL, last_event_id INTEGER NOT NULL, head_hash TEXT NOT NULL)`,
	`CREATE TRIGGER memory_checkpoints_no_update BEFORE UPDATE ON memory_checkpoints BEGIN SELECT RAISE(ABORT, 'memory_checkpoints is append-only'); END`,
	`CREATE TRIGGER memory_checkpoints_no_delete BEFORE DELETE ON memory_checkpoints BEGIN SELECT RAISE(ABORT, 'memory_checkpoints is append-only'); END`,
	`CREATE TABLE query_log(id INTEGER PRIMARY KEY, ts TEXT NOT NULL, session TEXT NOT NULL, tool TEXT NOT NULL, query TEXT, ok INTEGER NOT NULL, rows INTEGER, error TEXT, duration_ms INTEGER NOT NULL, detail TEXT)`,
	`CREATE INDEX query_log_ts ON query_log(ts)`,
	`CREATE TRIGGER query_log_no_update BEFORE UPDATE ON query_log BEGIN SELECT RAISE(ABORT, 'query_log is append-only'); END`,
	`CREATE TRIGGER query_log_no_delete BEFORE DELETE ON query_log BEGIN SELECT RAISE(ABORT, 'query_log is append-only'); END`,
	"CREATE VIEW query_errors AS\n-- description: failed tool calls, newest first; shows where queries go wrong\nSELECT id, ts, tool, query, error FROM query_log WHERE ok = 0 ORDER BY id DESC",
	`INSERT INTO memory_events VALUES (1, '2025-01-01T00:00:00Z', '20250101T000000Z-abcd', 'note', 'first event', '0000000000000000000000000000000000000000000000000000000000000000', 'h1')`,
	`INSERT INTO memory_checkpoints VALUES (1, '2025-01-01T00:00:01Z', '20250101T000000Z-abcd', 'state', 1, 'h1')`,
	`INSERT INTO query_log VALUES (1, '2025-01-01T00:00:02Z', '20250101T000000Z-abcd', 'read_query', 'SELECT nope', 0, NULL, 'SQL_ERROR: no such table', 3, '{}')`,
	// The memory's full-text index (SPEC 5.4), as memory/index.go makes it.
	`CREATE VIRTUAL TABLE memory_events_fts USING fts5(content, kind, content='memory_events', content_rowid='id', tokenize="unicode61 remove_diacritics 2 tokenchars '_'")`,
	`CREATE VIRTUAL TABLE memory_checkpoints_fts USING fts5(summary, content='memory_checkpoints', content_rowid='id', tokenize="unicode61 remove_diacritics 2 tokenchars '_'")`,
	`INSERT INTO memory_events_fts(rowid, content, kind) SELECT id, content, kind FROM memory_events`,
	`INSERT INTO memory_checkpoints_fts(rowid, summary) SELECT id, summary FROM memory_checkpoints`,
	// A cluster's guards (SPEC 13), as memory/cluster.go makes them.
	`CREATE UNIQUE INDEX memory_events_prev_hash ON memory_events(prev_hash)`,
	`CREATE TABLE memory_cluster_guard (k INTEGER PRIMARY KEY, ok INTEGER NOT NULL CHECK (ok = 1))`,
	`INSERT INTO memory_cluster_guard VALUES (1, 1)`,

	`CREATE TABLE notes(id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT, tag TEXT UNIQUE)`,
	`INSERT INTO notes(body, tag) VALUES ('first', 'a'), ('second', 'b')`,
	`CREATE TABLE audit(x)`,
	`CREATE TABLE logged(x)`,
	`CREATE TRIGGER logged_audit AFTER INSERT ON logged BEGIN INSERT INTO audit VALUES (NEW.x); END`,
	`CREATE TABLE counters(id INTEGER PRIMARY KEY, n INTEGER)`,
	`INSERT INTO counters VALUES (1, 0)`,
	`CREATE TRIGGER counters_audit AFTER UPDATE ON counters BEGIN INSERT INTO audit VALUES (NEW.n); END`,
	`CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT)`,
	`CREATE TABLE child(id INTEGER PRIMARY KEY, parent_id INTEGER REFERENCES parent(id) ON DELETE CASCADE)`,
	`INSERT INTO parent VALUES (1, 'p')`,
	`INSERT INTO child VALUES (1, 1)`,
	`CREATE VIRTUAL TABLE docs USING fts5(body)`,
	`INSERT INTO docs(rowid, body) VALUES (1, 'hello world'), (2, 'second doc')`,
	`CREATE VIRTUAL TABLE bare USING fts5(body, content='')`,
	`INSERT INTO bare(rowid, body) VALUES (1, 'hello world')`,
	`CREATE TABLE fts_commands(cmd)`,
	`CREATE TRIGGER fts_commands_run AFTER INSERT ON fts_commands BEGIN INSERT INTO bare(bare) VALUES (NEW.cmd); END`,
	`CREATE VIRTUAL TABLE boxes USING rtree(id, minx, maxx, miny, maxy)`,
	`INSERT INTO boxes VALUES (1, 0, 1, 0, 1), (2, 2, 3, 2, 3)`,
	// A trigger body that writes a protected table, planted by an earlier
	// destructive_query: firing it must be refused.
	`CREATE TABLE sneaky(x)`,
	`CREATE TRIGGER sneaky_log AFTER INSERT ON sneaky BEGIN INSERT INTO memory_events(ts, session, content, prev_hash, hash) VALUES ('t', 's', NEW.x, 'p', NEW.x); END`,
	// A trigger body that deletes: a write_query INSERT must not delete.
	`CREATE TABLE purge(x)`,
	`CREATE TRIGGER purge_notes AFTER INSERT ON purge BEGIN DELETE FROM notes WHERE body = NEW.x; END`,
	`CREATE VIEW recent AS SELECT id, upper(body) AS body FROM notes`,
	`ANALYZE`,
	`PRAGMA user_version = 7`,
	`PRAGMA application_id = 9`,
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "policy-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	templates.full = filepath.Join(dir, "full.db")
	templates.empty = filepath.Join(dir, "empty.db")
	err = buildTemplate(templates.full, fullSchema)
	if err == nil {
		err = buildTemplate(templates.empty, []string{`CREATE TABLE plain(x)`, `INSERT INTO plain VALUES (1)`})
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "policy tests: build template:", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func buildTemplate(path string, stmts []string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, s := range stmts {
		if _, err := db.Exec(s); err != nil {
			return fmt.Errorf("%s: %w", s, err)
		}
	}
	return db.Close()
}

// outcome is what happened to one statement on one fresh database.
type outcome struct {
	violation   *errcode.Error
	err         error // from prepare or run
	summary     Summary
	fileChanged bool
	protBefore  string
	protAfter   string
	extraFiles  []string // files other than the database left in its folder
	dbPath      string
}

// run compiles and runs query on a fresh copy of template, the way the
// worker does: backstops on, shadow tables listed in the writing modes,
// authorizer installed through the worker's binding (which tells NULL
// PRAGMA values and virtual tables' own statements apart).
func run(t testing.TB, template string, mode Mode, opts Options, query string) outcome {
	t.Helper()
	return runWith(t, runConfig{template: template, mode: mode, opts: opts, queryOnly: mode <= Read, timeout: 5 * time.Second}, query)
}

type runConfig struct {
	template  string
	mode      Mode
	opts      Options
	queryOnly bool // PRAGMA query_only=1, as the worker sets for Select and Read
	timeout   time.Duration
}

func runWith(t testing.TB, cfg runConfig, query string) outcome {
	t.Helper()
	template, mode, opts := cfg.template, cfg.mode, cfg.opts
	dir := t.TempDir()
	path := filepath.Join(dir, "db.sqlite")
	copyFile(t, template, path)
	query = strings.ReplaceAll(query, "{dir}", filepath.ToSlash(dir))

	var out outcome
	out.dbPath = path
	before := sqlitetest.FileDigest(t, path)
	out.protBefore = protectedDigest(t, path)

	c := openBackstopped(t, path, mode, cfg.queryOnly)
	if opts.ShadowTables == nil && mode >= Write {
		opts.ShadowTables = shadowTables(t, c)
	}
	a := New(mode, opts)
	quiet := false // the worker's own helper statements run with the policy silent
	if err := c.SetAuthorizer(func(r rawsqlite.AuthRequest) int {
		if quiet {
			return rawsqlite.AuthOK
		}
		return a.Authorize(CallFrom(r))
	}); err != nil {
		t.Fatal(err)
	}
	timer := time.AfterFunc(cfg.timeout, c.Interrupt)
	out.err = prepareAndRun(c, a, query, &out.summary, func(st *rawsqlite.Stmt) error {
		quiet = true
		defer func() { quiet = false }()
		return checkFTS(c, a, mode, st)
	})
	timer.Stop()
	out.violation = a.Violation()
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}

	out.fileChanged = sqlitetest.FileDigest(t, path) != before
	out.protAfter = protectedDigest(t, path)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if e.Name() != "db.sqlite" {
			out.extraFiles = append(out.extraFiles, e.Name())
		}
	}
	return out
}

// openBackstopped opens path with the worker's connection backstops.
func openBackstopped(t testing.TB, path string, mode Mode, queryOnly bool) *rawsqlite.Conn {
	t.Helper()
	flags := rawsqlite.ReadWrite
	if mode == Select {
		flags = rawsqlite.ReadOnly
	}
	c, err := rawsqlite.Open(path, flags)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.DBConfig(rawsqlite.ConfigDefensive, true); err != nil {
		t.Fatal(err)
	}
	if _, err := c.DBConfig(rawsqlite.ConfigTrustedSchema, false); err != nil {
		t.Fatal(err)
	}
	c.Limit(rawsqlite.LimitAttached, 0)
	c.Limit(rawsqlite.LimitLength, 1<<20) // keep fuzz inputs small and bounded
	setup := "PRAGMA foreign_keys=ON"
	if queryOnly {
		setup += "; PRAGMA query_only=1"
	}
	if err := c.Exec(setup); err != nil {
		t.Fatal(err)
	}
	return c
}

// CallFrom is the worker's translation of a binding request.
func CallFrom(r rawsqlite.AuthRequest) Call {
	return Call{Action: r.Action, Arg1: r.Arg1, Arg2: r.Arg2, DB: r.DB, Trigger: r.Trigger, Arg2Null: r.Arg2Null, Nested: r.Nested}
}

// prepareAndRun runs every statement of query in turn, like a driver that
// runs multi-statement strings: a harsher test of the authorizer than the
// worker's one statement per call. The summary is the first statement's;
// check runs on every statement before its first step, as the worker's
// program checks do.
func prepareAndRun(c *rawsqlite.Conn, a *Authorizer, query string, sum *Summary, check func(*rawsqlite.Stmt) error) error {
	for first := true; ; first = false {
		st, tail, err := c.Prepare(query)
		if first {
			*sum = a.Summary()
		}
		if err != nil {
			return err
		}
		if st == nil {
			return nil
		}
		if err := check(st); err != nil {
			st.Finalize()
			return err
		}
		for n := 0; n < 10000; n++ {
			row, err := st.Step()
			if err != nil {
				st.Finalize()
				return err
			}
			if !row {
				break
			}
		}
		st.Finalize()
		query = tail
	}
}

// errFTS marks a statement the FTS command check refused; the violation is
// recorded on the Authorizer like the authorizer's own.
var errFTS = fmt.Errorf("not authorized (FTS command)")

// checkFTS does what the worker does before running a write: it finds the
// FTS tables among the statement's insert targets and checks the program
// for commands the mode does not allow. A refusal is recorded on a.
func checkFTS(c *rawsqlite.Conn, a *Authorizer, mode Mode, st *rawsqlite.Stmt) error {
	if mode != Write {
		return nil
	}
	var tables []FTSTable
	for _, name := range a.InsertTargets() {
		t := FTSTable{Name: name, Command: -1}
		var command string
		eachRow(c, "SELECT cid, name, hidden FROM pragma_table_xinfo('"+strings.ReplaceAll(name, "'", "''")+"')", func(r *rawsqlite.Stmt) {
			t.Columns++
			if r.ColumnInt64(2) != 0 && rawsqlite.SameName(r.ColumnText(1), name) {
				t.Command, command = int(r.ColumnInt64(0)), r.ColumnText(1)
			}
		})
		if t.Command < 0 {
			continue
		}
		eachRow(c, `EXPLAIN INSERT INTO "`+name+`"("`+command+`") VALUES (NULL)`, func(r *rawsqlite.Stmt) {
			if r.ColumnText(1) == "VUpdate" {
				t.Vtab = r.ColumnText(5)
			}
		})
		tables = append(tables, t)
	}
	if len(tables) == 0 {
		return nil
	}
	var ops []Op
	eachRow(c, "EXPLAIN "+st.SQL(), func(r *rawsqlite.Stmt) {
		ops = append(ops, Op{Addr: r.ColumnInt64(0), Opcode: r.ColumnText(1), P1: r.ColumnInt64(2), P2: r.ColumnInt64(3), P3: r.ColumnInt64(4), P4: r.ColumnText(5)})
	})
	if v := CheckFTSCommands(mode, ops, tables); v != nil {
		a.mu.Lock()
		if a.violation == nil {
			a.violation = v
		}
		a.mu.Unlock()
		return errFTS
	}
	return nil
}

// eachRow runs one of the harness's helper statements.
func eachRow(c *rawsqlite.Conn, sql string, fn func(*rawsqlite.Stmt)) {
	st, _, err := c.Prepare(sql)
	if err != nil || st == nil {
		return
	}
	defer st.Finalize()
	for {
		row, err := st.Step()
		if err != nil || !row {
			return
		}
		fn(st)
	}
}

// shadowTables lists shadow tables the way the worker does, before the
// authorizer is installed.
func shadowTables(t testing.TB, c *rawsqlite.Conn) map[string]bool {
	t.Helper()
	st, _, err := c.Prepare(`SELECT name FROM pragma_table_list WHERE type = 'shadow'`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Finalize()
	m := make(map[string]bool)
	for {
		row, err := st.Step()
		if err != nil {
			t.Fatal(err)
		}
		if !row {
			return m
		}
		m[st.ColumnText(0)] = true
	}
}

// protectedDigest renders the protected objects' rows and schema entries
// (including triggers and indexes on them) through a plain connection.
func protectedDigest(t testing.TB, path string) string {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var b strings.Builder
	queries := []string{
		`SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE lower(tbl_name) IN ('memory_events', 'memory_checkpoints', 'query_log', 'query_errors') OR lower(tbl_name) LIKE 'memory\_%\_fts%' ESCAPE '\' ORDER BY type, name`,
		`SELECT * FROM memory_events ORDER BY id`,
		`SELECT * FROM memory_checkpoints ORDER BY id`,
		`SELECT * FROM query_log ORDER BY id`,
		// The index, through its shadow tables (a scan of an external-content
		// table would read the content table instead).
		`SELECT * FROM memory_events_fts_data ORDER BY id`,
		`SELECT * FROM memory_events_fts_idx ORDER BY segid, term`,
		`SELECT * FROM memory_events_fts_docsize ORDER BY id`,
		`SELECT * FROM memory_events_fts_config ORDER BY k`,
		`SELECT * FROM memory_checkpoints_fts_data ORDER BY id`,
		`SELECT * FROM memory_checkpoints_fts_docsize ORDER BY id`,
	}
	for _, q := range queries {
		rows, err := sqlitetest.Rows(db, q)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err) // a dropped table shows as a difference
			continue
		}
		for _, vals := range rows {
			fmt.Fprintf(&b, "%q\n", vals)
		}
	}
	return b.String()
}

// queryInt runs a check query on a plain connection.
func queryInt(t testing.TB, path, q string) (int64, error) {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow(q).Scan(&n)
	return n, err
}

func copyFile(t testing.TB, from, to string) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.Create(to)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}
