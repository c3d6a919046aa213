package policy

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"modernc.org/sqlite"
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
	violation   *Violation
	err         error // from prepare or run
	summary     Summary
	fileChanged bool
	protBefore  string
	protAfter   string
	extraFiles  []string // files other than the database left in its folder
	dbPath      string
}

// run compiles and runs query on a fresh copy of template, the way the
// worker does: backstops on, shadow tables listed, authorizer installed,
// one statement, no transaction.
func run(t testing.TB, template string, mode Mode, opts Options, query string) outcome {
	t.Helper()
	return runWith(t, runConfig{template: template, mode: mode, opts: opts, dsn: DSNParams(mode), timeout: 5 * time.Second}, query)
}

type runConfig struct {
	template string
	mode     Mode
	opts     Options
	dsn      string // DSN query parameters
	timeout  time.Duration
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
	before := fileHash(t, path)
	out.protBefore = protectedDigest(t, path)

	dsn := "file:" + path + "?" + cfg.dsn + "&_pragma=foreign_keys(1)"
	if mode == Select {
		dsn += "&mode=ro"
	}
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.timeout)
	defer cancel()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if opts.ShadowTables == nil {
		opts.ShadowTables = shadowTables(t, ctx, conn)
	}
	if _, err := sqlite.Limit(conn, LimitAttached, 0); err != nil {
		t.Fatal(err)
	}
	// Keep fuzz inputs small and bounded.
	if _, err := sqlite.Limit(conn, 0 /* SQLITE_LIMIT_LENGTH */, 1<<20); err != nil {
		t.Fatal(err)
	}
	a := New(mode, opts)
	var running atomic.Bool
	install(t, conn, a, &running)

	out.err = prepareAndRun(ctx, conn, a, query, &out.summary, &running)
	out.violation = a.Violation()
	conn.Close()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	out.fileChanged = fileHash(t, path) != before
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

func prepareAndRun(ctx context.Context, conn *sql.Conn, a *Authorizer, query string, sum *Summary, running *atomic.Bool) error {
	stmt, err := conn.PrepareContext(ctx, query)
	*sum = a.Summary()
	running.Store(true)
	if err != nil {
		return err
	}
	defer stmt.Close()
	if sum.SettingRead {
		// The worker runs these only after checking the compiled program
		// for writes (worker tests cover that); the policy alone stops here.
		return nil
	}
	rows, err := stmt.QueryContext(ctx)
	if err != nil {
		return err
	}
	defer rows.Close()
	for n := 0; rows.Next() && n < 10000; n++ {
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return rows.Close()
}

// install puts a on conn. A statement the policy flags SettingRead while the
// driver is already running (the second statement of a multi-statement
// string, which the worker refuses before anything runs) is denied: the
// worker runs such statements only after its program check.
func install(t testing.TB, conn *sql.Conn, a *Authorizer, running *atomic.Bool) {
	t.Helper()
	err := conn.Raw(func(dc any) error {
		r, ok := dc.(sqlite.AuthorizerRegisterer)
		if !ok {
			return fmt.Errorf("driver connection %T has no authorizer", dc)
		}
		return r.RegisterAuthorizer(func(ac sqlite.AuthorizerActionCode, a1, a2, db, trig string) sqlite.AuthorizerReturnCode {
			flagged := a.Summary().SettingRead
			rc := a.Authorize(int(ac), a1, a2, db, trig)
			if running.Load() && !flagged && a.Summary().SettingRead {
				return sqlite.AuthorizerDeny
			}
			return sqlite.AuthorizerReturnCode(rc)
		})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// shadowTables lists shadow tables the way the worker does, before the
// authorizer is installed.
func shadowTables(t testing.TB, ctx context.Context, conn *sql.Conn) map[string]bool {
	t.Helper()
	rows, err := conn.QueryContext(ctx, `SELECT name FROM pragma_table_list WHERE type = 'shadow'`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	m := make(map[string]bool)
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		m[n] = true
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return m
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
		`SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE lower(tbl_name) IN ('memory_events', 'memory_checkpoints', 'query_log', 'query_errors') ORDER BY type, name`,
		`SELECT * FROM memory_events ORDER BY id`,
		`SELECT * FROM memory_checkpoints ORDER BY id`,
		`SELECT * FROM query_log ORDER BY id`,
	}
	for _, q := range queries {
		rows, err := db.Query(q)
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", q, err) // a dropped table shows as a difference
			continue
		}
		cols, _ := rows.Columns()
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			fmt.Fprintf(&b, "%q\n", vals)
		}
		rows.Close()
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

func fileHash(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}
