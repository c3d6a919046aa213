package rawsqlite

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// openTemp opens a new database file in a temporary directory.
func openTemp(t testing.TB) (*Conn, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "test.db")
	c, err := Open(path, ReadWrite|Create)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c, path
}

func mustExec(t testing.TB, c *Conn, sql string) {
	t.Helper()
	if err := c.Exec(sql); err != nil {
		t.Fatalf("Exec(%q): %v", sql, err)
	}
}

// runAll prepares sql and steps it to completion, returning the first error.
func runAll(c *Conn, sql string) error {
	st, _, err := c.Prepare(sql)
	if err != nil {
		return err
	}
	defer st.Finalize()
	for {
		row, err := st.Step()
		if err != nil || !row {
			return err
		}
	}
}

// wantCode fails unless err is an *Error with the given primary code.
func wantCode(t *testing.T, err error, primary int) *Error {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error = %v (%T), want *Error with primary code %d", err, err, primary)
	}
	if e.Primary() != primary {
		t.Fatalf("primary code = %d (extended %d, %q), want %d", e.Primary(), e.Code, e.Msg, primary)
	}
	return e
}

func TestPrepareTail(t *testing.T) {
	c, _ := openTemp(t)
	tests := []struct {
		name, sql  string
		wantStmt   bool
		wantTail   string
		wantSQL    string
		wantErrSub string
	}{
		{name: "two statements", sql: "SELECT 1; SELECT 2", wantStmt: true, wantTail: " SELECT 2", wantSQL: "SELECT 1;"},
		{name: "trailing line comment", sql: "SELECT 1 -- c", wantStmt: true, wantTail: ""},
		{name: "trailing comment after semicolon", sql: "SELECT 1;\n-- c\n", wantStmt: true, wantTail: "\n-- c\n"},
		{name: "only a comment", sql: "  /* only a comment */ ", wantStmt: false, wantTail: ""},
		{name: "empty", sql: "", wantStmt: false, wantTail: ""},
		{name: "semicolons only", sql: " ;; ", wantStmt: false, wantTail: ""},
		{name: "semicolon in string", sql: "SELECT ';'", wantStmt: true, wantTail: ""},
		{name: "leading empty statement skipped", sql: "; SELECT 2", wantStmt: true, wantTail: "", wantSQL: "; SELECT 2"},
		{name: "extra semicolon stays in tail", sql: "SELECT 1;;", wantStmt: true, wantTail: ";"},
		{name: "multibyte before tail", sql: "SELECT 'žluť';SELECT 2", wantStmt: true, wantTail: "SELECT 2"},
		{name: "unterminated string", sql: "SELECT 'abc", wantErrSub: "unrecognized token"},
		{name: "syntax error", sql: "SELEC 1", wantErrSub: "syntax error"},
		{name: "NUL byte", sql: "SELECT 1\x00; DROP TABLE t", wantErrSub: "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, tail, err := c.Prepare(tt.sql)
			if tt.wantErrSub != "" {
				if st != nil {
					st.Finalize()
				}
				e := wantCode(t, err, ResultError)
				if !strings.Contains(e.Msg, tt.wantErrSub) {
					t.Fatalf("error %q does not contain %q", e.Msg, tt.wantErrSub)
				}
				return
			}
			if err != nil {
				t.Fatalf("Prepare: %v", err)
			}
			if (st != nil) != tt.wantStmt {
				t.Fatalf("stmt = %v, want stmt %v", st, tt.wantStmt)
			}
			if tail != tt.wantTail {
				t.Fatalf("tail = %q, want %q", tail, tt.wantTail)
			}
			if st != nil {
				if tt.wantSQL != "" && st.SQL() != tt.wantSQL {
					t.Errorf("SQL() = %q, want %q", st.SQL(), tt.wantSQL)
				}
				if err := st.Finalize(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

func TestIsBlankAndComplete(t *testing.T) {
	blank := []struct {
		s    string
		want bool
	}{
		{"", true},
		{" \t\r\n\f", true},
		{"-- x", true},
		{"-- x\n  /* y */\n", true},
		{"/* unterminated", true},
		{";", false},
		{"\v", false},
		{" SELECT 2", false},
		{"-- x\nSELECT 2", false},
		{"/* a */ x", false},
		{"- 1", false},
	}
	for _, tt := range blank {
		t.Run(fmt.Sprintf("IsBlank(%q)", tt.s), func(t *testing.T) {
			if got := IsBlank(tt.s); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
	complete := []struct {
		s    string
		want bool
	}{
		{"SELECT 1;", true},
		{"SELECT 1", false},
		{"SELECT ';'", false},
		{"SELECT 1; -- c", false}, // a comment after the semicolon makes it incomplete
		{"CREATE TRIGGER tr AFTER INSERT ON t BEGIN SELECT 1;", false},
		{"SELECT 1;\x00", false},
	}
	for _, tt := range complete {
		t.Run(fmt.Sprintf("Complete(%q)", tt.s), func(t *testing.T) {
			if got := Complete(tt.s); got != tt.want {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestColumnTypesAndValues(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, `CREATE TABLE v(i INTEGER, r REAL, t TEXT, b BLOB, n);
		INSERT INTO v VALUES (42, 0.5, 'héllo ☃', x'00ff', NULL)`)

	st, _, err := c.Prepare(`SELECT NULL, '', 0, 0.0, 1e16, x'00ff', 'žluťoučký 🐎', x'' AS empty_blob, -9223372036854775808`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Finalize()
	if row, err := st.Step(); err != nil || !row {
		t.Fatalf("Step = %v, %v", row, err)
	}
	tests := []struct {
		col      int
		typ      int
		text     string
		i64      int64
		f64      float64
		blob     []byte
		numBytes int
	}{
		{col: 0, typ: TypeNull},
		{col: 1, typ: TypeText, text: ""},
		{col: 2, typ: TypeInteger, i64: 0, text: "0", numBytes: 1},
		{col: 3, typ: TypeFloat, f64: 0, text: "0.0", numBytes: 3},
		{col: 4, typ: TypeFloat, f64: 1e16, text: "10000000000000000.0", numBytes: 19},
		{col: 5, typ: TypeBlob, blob: []byte{0, 0xff}, numBytes: 2},
		{col: 6, typ: TypeText, text: "žluťoučký 🐎", numBytes: len("žluťoučký 🐎")},
		{col: 7, typ: TypeBlob},
		{col: 8, typ: TypeInteger, i64: -9223372036854775808, text: "-9223372036854775808", numBytes: 20},
	}
	if got := st.ColumnCount(); got != len(tests) {
		t.Fatalf("ColumnCount = %d, want %d", got, len(tests))
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("col%d", tt.col), func(t *testing.T) {
			// The type first: the other accessors may convert the value.
			if got := st.ColumnType(tt.col); got != tt.typ {
				t.Fatalf("ColumnType = %d, want %d", got, tt.typ)
			}
			switch tt.typ {
			case TypeInteger:
				if got := st.ColumnInt64(tt.col); got != tt.i64 {
					t.Errorf("ColumnInt64 = %d, want %d", got, tt.i64)
				}
			case TypeFloat:
				if got := st.ColumnDouble(tt.col); got != tt.f64 {
					t.Errorf("ColumnDouble = %v, want %v", got, tt.f64)
				}
			case TypeBlob:
				if got := st.ColumnBlob(tt.col); !bytes.Equal(got, tt.blob) {
					t.Errorf("ColumnBlob = %x, want %x", got, tt.blob)
				}
			}
			if tt.typ != TypeBlob {
				if got := st.ColumnText(tt.col); got != tt.text {
					t.Errorf("ColumnText = %q, want %q", got, tt.text)
				}
				if got := st.ColumnTextView(tt.col); string(got) != tt.text {
					t.Errorf("ColumnTextView = %q, want %q", got, tt.text)
				}
			}
			if got := st.ColumnBytes(tt.col); got != tt.numBytes {
				t.Errorf("ColumnBytes = %d, want %d", got, tt.numBytes)
			}
		})
	}
	if got := st.ColumnName(7); got != "empty_blob" {
		t.Errorf("ColumnName(7) = %q", got)
	}
	if got := st.ColumnName(99); got != "" {
		t.Errorf("ColumnName(99) = %q, want empty", got)
	}

	t.Run("table columns", func(t *testing.T) {
		st, _, err := c.Prepare(`SELECT i, r, t AS alias, b, n, i + 1 FROM v`)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Finalize()
		wantNames := []string{"i", "r", "alias", "b", "n", "i + 1"}
		wantDecl := []string{"INTEGER", "REAL", "TEXT", "BLOB", "", ""}
		wantTypes := []int{TypeInteger, TypeFloat, TypeText, TypeBlob, TypeNull, TypeInteger}
		if row, err := st.Step(); err != nil || !row {
			t.Fatalf("Step = %v, %v", row, err)
		}
		for i := range wantNames {
			if got := st.ColumnName(i); got != wantNames[i] {
				t.Errorf("ColumnName(%d) = %q, want %q", i, got, wantNames[i])
			}
			if got := st.ColumnDeclType(i); got != wantDecl[i] {
				t.Errorf("ColumnDeclType(%d) = %q, want %q", i, got, wantDecl[i])
			}
			if got := st.ColumnType(i); got != wantTypes[i] {
				t.Errorf("ColumnType(%d) = %d, want %d", i, got, wantTypes[i])
			}
		}
		if got := st.ColumnText(2); got != "héllo ☃" {
			t.Errorf("text = %q", got)
		}
		if row, err := st.Step(); err != nil || row {
			t.Fatalf("second Step = %v, %v; want done", row, err)
		}
	})
}

func TestBindings(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE b(x)")
	ins, _, err := c.Prepare("INSERT INTO b VALUES (?1)")
	if err != nil {
		t.Fatal(err)
	}
	defer ins.Finalize()
	if n := ins.BindParameterCount(); n != 1 {
		t.Fatalf("BindParameterCount = %d", n)
	}
	binds := []func() error{
		func() error { return ins.BindText(1, "") },
		func() error { return ins.BindNull(1) },
		func() error { return ins.BindInt64(1, -7) },
		func() error { return ins.BindDouble(1, 2.5) },
		func() error { return ins.BindText(1, "a'b\"c") },
		func() error { return ins.BindBlob(1, []byte{1, 2}) },
		func() error { return ins.ClearBindings() },
	}
	for i, bind := range binds {
		if err := bind(); err != nil {
			t.Fatalf("bind %d: %v", i, err)
		}
		if _, err := ins.Step(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if err := ins.Reset(); err != nil {
			t.Fatalf("reset %d: %v", i, err)
		}
	}
	if err := ins.BindInt64(2, 1); ErrorCode(err) != ResultRange {
		t.Errorf("bind out of range: %v, want ResultRange", err)
	}

	sel, _, err := c.Prepare("SELECT typeof(x), quote(x) FROM b ORDER BY rowid")
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Finalize()
	var got []string
	for {
		row, err := sel.Step()
		if err != nil {
			t.Fatal(err)
		}
		if !row {
			break
		}
		got = append(got, sel.ColumnText(0)+" "+sel.ColumnText(1))
	}
	want := []string{"text ''", "null NULL", "integer -7", "real 2.5", `text 'a''b"c'`, "blob X'0102'", "null NULL"}
	if !slices.Equal(got, want) {
		t.Fatalf("rows = %q, want %q", got, want)
	}
}

func TestStatementInfoAndCounters(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE t(a INTEGER PRIMARY KEY, b)")
	tests := []struct {
		sql      string
		readonly bool
		explain  int
	}{
		{"SELECT * FROM t", true, 0},
		{"INSERT INTO t(b) VALUES (1)", false, 0},
		{"EXPLAIN SELECT 1", true, 1},
		{"EXPLAIN QUERY PLAN SELECT * FROM t", true, 2},
		{"BEGIN", true, 0},
	}
	for _, tt := range tests {
		t.Run(tt.sql, func(t *testing.T) {
			st, _, err := c.Prepare(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Finalize()
			if got := st.Readonly(); got != tt.readonly {
				t.Errorf("Readonly = %v, want %v", got, tt.readonly)
			}
			if got := st.IsExplain(); got != tt.explain {
				t.Errorf("IsExplain = %d, want %d", got, tt.explain)
			}
		})
	}

	if !c.Autocommit() {
		t.Fatal("Autocommit false outside a transaction")
	}
	mustExec(t, c, "BEGIN; INSERT INTO t(b) VALUES (1), (2), (3)")
	if c.Autocommit() {
		t.Fatal("Autocommit true inside BEGIN")
	}
	if got := c.Changes(); got != 3 {
		t.Errorf("Changes = %d, want 3", got)
	}
	if got := c.LastInsertRowID(); got != 3 {
		t.Errorf("LastInsertRowID = %d, want 3", got)
	}
	mustExec(t, c, "UPDATE t SET b = 0 WHERE a < 3; COMMIT")
	if got := c.Changes(); got != 2 {
		t.Errorf("Changes after UPDATE = %d, want 2", got)
	}
	if got := c.TotalChanges(); got != 5 {
		t.Errorf("TotalChanges = %d, want 5", got)
	}
}

func TestOpen(t *testing.T) {
	dir := t.TempDir()
	t.Run("bad flags", func(t *testing.T) {
		for _, f := range []OpenFlags{0, ReadOnly | ReadWrite, ReadOnly | Create, Create, 1 << 20} {
			if c, err := Open(filepath.Join(dir, "x.db"), f); err == nil {
				c.Close()
				t.Errorf("Open with flags %#x succeeded", f)
			}
		}
	})
	t.Run("missing file read-only", func(t *testing.T) {
		_, err := Open(filepath.Join(dir, "missing.db"), ReadOnly)
		e := wantCode(t, err, ResultCantOpen)
		if e.Msg == "" {
			t.Fatal("empty message")
		}
	})
	t.Run("read-only refuses writes", func(t *testing.T) {
		path := filepath.Join(dir, "ro.db")
		rw, err := Open(path, ReadWrite|Create)
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, rw, "CREATE TABLE t(x)")
		rw.Close()
		ro, err := Open(path, ReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer ro.Close()
		wantCode(t, runAll(ro, "INSERT INTO t VALUES (1)"), ResultReadOnly)
	})
	t.Run("close is idempotent and later calls fail", func(t *testing.T) {
		c, err := Open(filepath.Join(dir, "c.db"), ReadWrite|Create)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		c.Interrupt()
		if _, _, err := c.Prepare("SELECT 1"); ErrorCode(err) != ResultMisuse {
			t.Fatalf("Prepare after Close: %v", err)
		}
	})
	t.Run("close with an open statement", func(t *testing.T) {
		c, err := Open(filepath.Join(dir, "z.db"), ReadWrite|Create)
		if err != nil {
			t.Fatal(err)
		}
		st, _, err := c.Prepare("SELECT 1")
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := st.Step(); ErrorCode(err) != ResultMisuse {
			t.Fatalf("Step after Close: %v", err)
		}
		if err := st.Finalize(); err != nil {
			t.Fatal(err)
		}
		if c.tls != nil {
			t.Fatal("TLS not released after the last Finalize")
		}
	})
}

func TestAuthorizer(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, `CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT);
		CREATE TABLE log(x);
		CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.a); END`)

	type call struct {
		action         int
		arg1, arg2     string
		dbName, inside string
	}
	var calls []call
	record := func(r AuthRequest) int {
		calls = append(calls, call{r.Action, r.Arg1, r.Arg2, r.DB, r.Trigger})
		return AuthOK
	}
	if err := c.SetAuthorizer(record); err != nil {
		t.Fatal(err)
	}
	seen := []struct {
		sql  string
		want []call
	}{
		{"SELECT b FROM t", []call{{AuthSelect, "", "", "", ""}, {AuthRead, "t", "b", "main", ""}}},
		{"INSERT INTO t(b) VALUES ('x')", []call{{AuthInsert, "t", "", "main", ""}, {AuthInsert, "log", "", "main", "tr"}}},
		{"UPDATE t SET b = 'y'", []call{{AuthUpdate, "t", "b", "main", ""}}},
		{"DELETE FROM t", []call{{AuthDelete, "t", "", "main", ""}}},
		{"CREATE INDEX i ON t(b)", []call{{AuthCreateIndex, "i", "t", "main", ""}, {AuthInsert, "sqlite_master", "", "main", ""}}},
		{"PRAGMA user_version = 3", []call{{AuthPragma, "user_version", "3", "", ""}}},
		{"ATTACH ':memory:' AS m", []call{{AuthAttach, ":memory:", "", "", ""}}},
		{"SELECT lower('A')", []call{{AuthFunction, "", "lower", "", ""}}},
		{"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 3) SELECT x FROM c", []call{{AuthRecursive, "", "", "", "c"}}}, // the CTE name arrives as the trigger/view argument
		{"BEGIN", []call{{AuthTransaction, "BEGIN", "", "", ""}}},
		{"CREATE VIRTUAL TABLE f USING fts5(x)", []call{{AuthCreateVTable, "f", "fts5", "main", ""}}},
	}
	for _, tt := range seen {
		t.Run("sees "+tt.sql, func(t *testing.T) {
			calls = nil
			st, _, err := c.Prepare(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			st.Finalize()
			for _, w := range tt.want {
				if !slices.Contains(calls, w) {
					t.Errorf("missing %+v in %+v", w, calls)
				}
			}
		})
	}

	deny := func(what int) AuthorizerFunc {
		return func(r AuthRequest) int {
			if r.Action == what {
				return AuthDeny
			}
			return AuthOK
		}
	}
	refused := []struct {
		name, msg string
		fn        AuthorizerFunc
		sql       string
	}{
		{"deny insert", "not authorized", deny(AuthInsert), "INSERT INTO t(b) VALUES ('x')"},
		{"deny insert from a trigger", "not authorized", func(r AuthRequest) int {
			if r.Action == AuthInsert && r.Trigger == "tr" {
				return AuthDeny
			}
			return AuthOK
		}, "INSERT INTO t(b) VALUES ('x')"},
		{"panic denies", "not authorized", func(r AuthRequest) int {
			if r.Action == AuthInsert {
				panic("boom")
			}
			return AuthOK
		}, "INSERT INTO t(b) VALUES ('x')"},
		{"unknown answer denies", "not authorized", func(AuthRequest) int { return 7 }, "SELECT 1"},
		// VACUUM is not authorized at prepare; its internal ATTACH is, at Step.
		{"deny attach blocks VACUUM when it runs", "authorization denied", deny(AuthAttach), "VACUUM"},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			if err := c.SetAuthorizer(tt.fn); err != nil {
				t.Fatal(err)
			}
			e := wantCode(t, runAll(c, tt.sql), ResultAuth)
			if e.Msg != tt.msg {
				t.Fatalf("message = %q, want %q", e.Msg, tt.msg)
			}
		})
	}

	t.Run("ignore reads NULL", func(t *testing.T) {
		mustExecNoAuth := func() {
			c.SetAuthorizer(nil)
			mustExec(t, c, "INSERT INTO t(b) VALUES ('secret')")
		}
		mustExecNoAuth()
		c.SetAuthorizer(func(r AuthRequest) int {
			if r.Action == AuthRead && r.Arg2 == "b" {
				return AuthIgnore
			}
			return AuthOK
		})
		st, _, err := c.Prepare("SELECT b FROM t")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Finalize()
		if row, err := st.Step(); err != nil || !row {
			t.Fatalf("Step = %v, %v", row, err)
		}
		if got := st.ColumnType(0); got != TypeNull {
			t.Fatalf("ignored column type = %d, want NULL", got)
		}
	})

	t.Run("nil removes", func(t *testing.T) {
		c.SetAuthorizer(deny(AuthInsert))
		if err := c.SetAuthorizer(nil); err != nil {
			t.Fatal(err)
		}
		if err := runAll(c, "INSERT INTO t(b) VALUES ('x')"); err != nil {
			t.Fatalf("insert after removal: %v", err)
		}
	})

	t.Run("close unregisters", func(t *testing.T) {
		c2, _ := openTemp(t)
		c2.SetAuthorizer(deny(AuthInsert))
		db := c2.db
		c2.Close()
		authorizers.RLock()
		_, ok := authorizers.m[db]
		authorizers.RUnlock()
		if ok {
			t.Fatal("authorizer still registered after Close")
		}
	})
}

const countForever = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c`

func TestInterrupt(t *testing.T) {
	c, _ := openTemp(t)
	st, _, err := c.Prepare(countForever)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Finalize()
	timer := time.AfterFunc(100*time.Millisecond, c.Interrupt)
	defer timer.Stop()
	start := time.Now()
	_, err = st.Step()
	e := wantCode(t, err, ResultInterrupt)
	if e.Msg != "interrupted" {
		t.Errorf("message = %q, want %q", e.Msg, "interrupted")
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("interrupt took %v", d)
	}

	t.Run("pending interrupt clears on the next statement", func(t *testing.T) {
		st.Reset()
		c.Interrupt()
		if !c.IsInterrupted() {
			t.Fatal("IsInterrupted false right after Interrupt")
		}
		if err := runAll(c, "SELECT 1"); err != nil {
			t.Fatalf("statement after a stale interrupt: %v", err)
		}
		if c.IsInterrupted() {
			t.Fatal("interrupt still pending")
		}
	})
}

func TestHardHeapLimit(t *testing.T) {
	if !MemStatsEnabled() {
		t.Fatal("memory statistics are off, the heap limit cannot work")
	}
	c, _ := openTemp(t)
	// Process-wide: restore whatever was set before.
	prev := SetHardHeapLimit(32 << 20)
	defer SetHardHeapLimit(prev)
	if got := SetHardHeapLimit(-1); got != 32<<20 {
		t.Fatalf("limit reads back as %d", got)
	}
	// group_concat keeps stepping after its buffer failed to grow and only
	// reports NOMEM at the end, so a randomblob() bomb still generates every
	// row (seconds, minutes under -race); zeroblob() fails the same way fast.
	bombs := []string{
		`SELECT length(group_concat(zeroblob(1000000))) FROM
			(WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c LIMIT 500) SELECT x FROM c)`,
		`SELECT length(randomblob(40000000))`,
	}
	for i, bomb := range bombs {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			e := wantCode(t, runAll(c, bomb), ResultNoMem)
			if e.Msg != "out of memory" {
				t.Errorf("message = %q, want %q", e.Msg, "out of memory")
			}
			if hw := MemoryHighwater(true); hw > 32<<20 {
				t.Errorf("high water %d above the limit", hw)
			}
		})
	}
	SetHardHeapLimit(prev)
	if err := runAll(c, "SELECT 1"); err != nil {
		t.Fatalf("connection unusable after NOMEM: %v", err)
	}
}

func TestMaxPageCountFull(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE big(x)")
	st, _, err := c.Prepare("PRAGMA page_count")
	if err != nil {
		t.Fatal(err)
	}
	st.Step()
	pages := st.ColumnInt64(0)
	st.Finalize()
	mustExec(t, c, fmt.Sprintf("PRAGMA max_page_count = %d", pages+4))
	e := wantCode(t, runAll(c, "INSERT INTO big VALUES (randomblob(100000))"), ResultFull)
	if e.Msg != "database or disk is full" {
		t.Errorf("message = %q", e.Msg)
	}
}

func TestDBConfigAndLimits(t *testing.T) {
	c, _ := openTemp(t)
	tests := []struct {
		op int
		on bool
	}{
		{ConfigDefensive, true},
		{ConfigTrustedSchema, false},
		{ConfigEnableLoadExtension, false},
		{ConfigDQSDML, false},
		{ConfigDQSDDL, false},
		{ConfigWritableSchema, false},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("op %d = %v", tt.op, tt.on), func(t *testing.T) {
			got, err := c.DBConfig(tt.op, tt.on)
			if err != nil {
				t.Fatal(err)
			}
			if got != tt.on {
				t.Fatalf("DBConfig reports %v, want %v", got, tt.on)
			}
		})
	}
	t.Run("non-boolean op refused", func(t *testing.T) {
		for _, op := range []int{1000, 1001, 1023, 0} {
			if _, err := c.DBConfig(op, true); ErrorCode(err) != ResultMisuse {
				t.Errorf("op %d: %v, want misuse", op, err)
			}
		}
	})
	t.Run("defensive blocks writable_schema edits", func(t *testing.T) {
		mustExec(t, c, "CREATE TABLE s(x); PRAGMA writable_schema = ON")
		if err := runAll(c, "UPDATE sqlite_master SET sql = 'CREATE TABLE s(y)' WHERE name = 's'"); err == nil {
			t.Fatal("sqlite_master edited in defensive mode")
		}
		mustExec(t, c, "PRAGMA writable_schema = OFF")
	})
	t.Run("DQS off", func(t *testing.T) {
		wantCode(t, runAll(c, `SELECT "no_such_column"`), ResultError)
	})
	t.Run("attach limit", func(t *testing.T) {
		if old := c.Limit(LimitAttached, 0); old != 10 {
			t.Errorf("old attached limit = %d, want 10", old)
		}
		if got := c.Limit(LimitAttached, -1); got != 0 {
			t.Errorf("limit reads back %d", got)
		}
		e := wantCode(t, runAll(c, "ATTACH ':memory:' AS m"), ResultError)
		if !strings.Contains(e.Msg, "too many attached databases") {
			t.Errorf("message = %q", e.Msg)
		}
	})
	t.Run("sql length limit", func(t *testing.T) {
		c.Limit(LimitSQLLength, 20)
		defer c.Limit(LimitSQLLength, 1_000_000_000)
		_, _, err := c.Prepare("SELECT 1 + 1 + 1 + 1 + 1 + 1")
		wantCode(t, err, ResultTooBig)
	})
	t.Run("busy timeout", func(t *testing.T) {
		if err := c.BusyTimeout(time.Second); err != nil {
			t.Fatal(err)
		}
	})
}

func TestBackup(t *testing.T) {
	c, path := openTemp(t)
	mustExec(t, c, `PRAGMA journal_mode = WAL;
		CREATE TABLE t(a INTEGER PRIMARY KEY, b TEXT, c BLOB);
		INSERT INTO t(b, c) SELECT 'row ' || x, randomblob(100)
			FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 2000) SELECT x FROM s)`)
	dump := func(c *Conn) string {
		t.Helper()
		st, _, err := c.Prepare("SELECT a, b, hex(c) FROM t ORDER BY a")
		if err != nil {
			t.Fatal(err)
		}
		defer st.Finalize()
		var sb strings.Builder
		for {
			row, err := st.Step()
			if err != nil {
				t.Fatal(err)
			}
			if !row {
				return sb.String()
			}
			fmt.Fprintf(&sb, "%d|%s|%s\n", st.ColumnInt64(0), st.ColumnText(1), st.ColumnText(2))
		}
	}
	dir := t.TempDir()

	t.Run("copies", func(t *testing.T) {
		dst := filepath.Join(dir, "snap.db")
		if err := c.Backup(dst); err != nil {
			t.Fatal(err)
		}
		snap, err := Open(dst, ReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		if got, want := dump(snap), dump(c); got != want || want == "" {
			t.Fatalf("backup differs: %d bytes vs %d", len(got), len(want))
		}
	})
	t.Run("missing directory", func(t *testing.T) {
		dst := filepath.Join(dir, "nope", "snap.db")
		if err := c.Backup(dst); err == nil {
			t.Fatal("backup into a missing directory succeeded")
		}
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("file left behind: %v", err)
		}
	})
	t.Run("existing file untouched", func(t *testing.T) {
		dst := filepath.Join(dir, "keep.db")
		os.WriteFile(dst, []byte("precious"), 0o644)
		if err := c.Backup(dst); err == nil {
			t.Fatal("backup overwrote an existing file")
		}
		if b, _ := os.ReadFile(dst); string(b) != "precious" {
			t.Fatalf("existing file changed: %q", b)
		}
	})
	t.Run("in steps, consistent while another connection writes", func(t *testing.T) {
		other, err := Open(path, ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer other.Close()
		if err := other.BusyTimeout(5 * time.Second); err != nil {
			t.Fatal(err)
		}
		want := dump(c)
		dst := filepath.Join(dir, "steps.db")
		var done []int
		err = c.BackupSteps(dst, 10, func(n, total int) bool {
			if len(done) > 0 && n <= done[len(done)-1] {
				t.Errorf("progress went from %d to %d pages: the backup restarted", done[len(done)-1], n)
				return false
			}
			done = append(done, n)
			if n > total {
				t.Errorf("%d of %d pages", n, total)
			}
			// A commit between steps must not reach the copy (nor restart it).
			mustExec(t, other, "INSERT INTO t(b) VALUES ('later')")
			return true
		})
		if err != nil {
			t.Fatal(err)
		}
		if len(done) < 3 {
			t.Fatalf("progress %v: want several steps", done)
		}
		snap, err := Open(dst, ReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		defer snap.Close()
		if got := dump(snap); got != want {
			t.Fatalf("stepped backup is not the state at its start: %d bytes vs %d", len(got), len(want))
		}
		if _, err := os.Stat(dst + "-journal"); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("journal left beside the copy: %v", err)
		}
		if !c.Autocommit() {
			t.Fatal("the read transaction was left open")
		}
	})
	t.Run("stopped in the middle leaves nothing", func(t *testing.T) {
		dst := filepath.Join(dir, "stopped.db")
		steps := 0
		err := c.BackupSteps(dst, 10, func(int, int) bool { steps++; return steps < 2 })
		wantCode(t, err, ResultInterrupt)
		for _, p := range []string{dst, dst + "-journal"} {
			if _, err := os.Stat(p); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left behind: %v", p, err)
			}
		}
	})
	t.Run("failed copy removes partial file", func(t *testing.T) {
		bad := filepath.Join(dir, "garbage.db")
		os.WriteFile(bad, bytes.Repeat([]byte("not a database "), 1000), 0o644)
		src, err := Open(bad, ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		defer src.Close()
		dst := filepath.Join(dir, "partial.db")
		wantCode(t, src.Backup(dst), ResultNotADB)
		if _, err := os.Stat(dst); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("partial file left behind: %v", err)
		}
	})
}

func TestExecRunsEveryStatement(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE t(x); INSERT INTO t VALUES (1); -- c\n INSERT INTO t VALUES (2);")
	st, _, err := c.Prepare("SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Finalize()
	st.Step()
	if n := st.ColumnInt64(0); n != 2 {
		t.Fatalf("count = %d, want 2", n)
	}
	if err := c.Exec("INSERT INTO nope VALUES (1)"); err == nil || err.Error() != "no such table: nope" {
		t.Fatalf("Exec error = %v", err)
	}
}

func BenchmarkScan100k(b *testing.B) {
	c, _ := openTemp(b)
	mustExec(b, c, `CREATE TABLE t(a INTEGER, b REAL, c TEXT, d BLOB, e TEXT);
		INSERT INTO t SELECT x, x * 0.5, 'text value ' || x, randomblob(16), NULL
			FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 100000) SELECT x FROM s)`)
	b.ReportAllocs()
	for b.Loop() {
		st, _, err := c.Prepare("SELECT a, b, c, d, e FROM t")
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			row, err := st.Step()
			if err != nil {
				b.Fatal(err)
			}
			if !row {
				break
			}
			rows++
			for i := range 5 {
				switch st.ColumnType(i) {
				case TypeInteger:
					_ = st.ColumnInt64(i)
				case TypeFloat:
					_ = st.ColumnDouble(i)
				case TypeText:
					_ = st.ColumnText(i)
				case TypeBlob:
					_ = st.ColumnBytes(i)
				}
			}
		}
		st.Finalize()
		if rows != 100000 {
			b.Fatalf("rows = %d", rows)
		}
	}
}

// TestAuthorizerNullAndNesting checks the two facts the trampoline adds to
// SQLite's arguments: a NULL Arg2 (PRAGMA x) told from an empty one
// (PRAGMA x = ”), and statements a virtual table prepares while another
// compiles told from the statement itself and its trigger bodies.
func TestAuthorizerNullAndNesting(t *testing.T) {
	c, path := openTemp(t)
	mustExec(t, c, `CREATE VIRTUAL TABLE rt USING rtree(id, minx, maxx);
		CREATE TABLE t(x); CREATE TABLE log(x);
		CREATE TRIGGER tr AFTER INSERT ON t BEGIN INSERT INTO log VALUES (new.x); END;
		CREATE TABLE p(id INTEGER PRIMARY KEY); CREATE TABLE ch(p REFERENCES p ON DELETE CASCADE);
		PRAGMA foreign_keys = ON`)
	// A fresh connection, so that rt is not connected yet.
	c.Close()
	c, err := Open(path, ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	mustExec(t, c, "PRAGMA foreign_keys = ON")

	var got []AuthRequest
	if err := c.SetAuthorizer(func(r AuthRequest) int {
		got = append(got, r)
		return AuthOK
	}); err != nil {
		t.Fatal(err)
	}
	find := func(action int, arg1 string) []AuthRequest {
		var out []AuthRequest
		for _, r := range got {
			if r.Action == action && r.Arg1 == arg1 {
				out = append(out, r)
			}
		}
		return out
	}
	type want struct {
		action       int
		arg1         string
		nested, null bool
	}
	cases := []struct {
		name, sql string
		want      []want
	}{
		{"pragma without value", "PRAGMA user_version", []want{{AuthPragma, "user_version", false, true}}},
		{"pragma with empty value", "PRAGMA user_version = ''", []want{{AuthPragma, "user_version", false, false}}},
		{"pragma with empty call value", "PRAGMA cache_size('')", []want{{AuthPragma, "cache_size", false, false}}},
		{"rtree connecting prepares its upkeep", "SELECT minx FROM rt", []want{
			{AuthRead, "rt", false, false}, {AuthInsert, "rt_node", true, true}, {AuthDelete, "rt_parent", true, true}}},
		{"a trigger body is the statement's", "INSERT INTO t VALUES (1)", []want{{AuthInsert, "t", false, true}, {AuthInsert, "log", false, true}}},
		{"a foreign-key action is the statement's", "REPLACE INTO p VALUES (1)", []want{{AuthDelete, "ch", false, true}}},
	}
	for _, tt := range cases {
		t.Run(tt.name, func(t *testing.T) {
			got = nil
			st, _, err := c.Prepare(tt.sql)
			if err != nil {
				t.Fatal(err)
			}
			st.Finalize()
			for _, w := range tt.want {
				rs := find(w.action, w.arg1)
				if len(rs) == 0 {
					t.Fatalf("no action %d on %q in %+v", w.action, w.arg1, got)
				}
				for _, r := range rs {
					if r.Nested != w.nested || r.Arg2Null != w.null {
						t.Errorf("%+v: want Nested %v, Arg2Null %v", r, w.nested, w.null)
					}
				}
			}
		})
	}
	if c.NestedPrepare() {
		t.Error("NestedPrepare is true while nothing compiles")
	}
}

func TestOverloadInnocuous(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, `CREATE VIRTUAL TABLE f USING fts5(b);
		INSERT INTO f VALUES ('alpha beta'), ('gamma');
		CREATE VIEW hits AS SELECT rowid, highlight(f, 0, '[', ']') AS h FROM f WHERE f MATCH 'alpha'`)
	if _, err := c.DBConfig(ConfigTrustedSchema, false); err != nil {
		t.Fatal(err)
	}
	if err := runAll(c, "SELECT * FROM hits"); err == nil || !strings.Contains(err.Error(), "unsafe use of") {
		t.Fatalf("before: error %v, want an unsafe use", err)
	}
	for _, f := range []struct {
		name string
		n    int
	}{{"match", 2}, {"highlight", -1}} {
		if err := c.OverloadInnocuous(f.name, f.n); err != nil {
			t.Fatal(err)
		}
	}
	st, _, err := c.Prepare("SELECT h FROM hits")
	if err != nil {
		t.Fatalf("after: %v", err)
	}
	defer st.Finalize()
	if row, err := st.Step(); err != nil || !row || st.ColumnText(0) != "[alpha] beta" {
		t.Fatalf("after: row %v, err %v, value %q", row, err, st.ColumnText(0))
	}
	// Without a virtual table behind it, the placeholder fails as SQLite's does.
	err = runAll(c, "SELECT highlight('x', 0)")
	if err == nil || err.Error() != "unable to use function highlight in the requested context" {
		t.Fatalf("placeholder: %v", err)
	}
	if err := c.OverloadInnocuous("", 1); err == nil {
		t.Fatal("empty name accepted")
	}
}

func TestSyncWAL(t *testing.T) {
	for _, tc := range []struct {
		mode string
		want bool
	}{{"wal", true}, {"delete", false}} {
		t.Run(tc.mode, func(t *testing.T) {
			c, _ := openTemp(t)
			mustExec(t, c, "PRAGMA journal_mode="+tc.mode)
			mustExec(t, c, "PRAGMA synchronous=NORMAL") // the commits below sync nothing in WAL mode
			mustExec(t, c, "CREATE TABLE t (a)")
			mustExec(t, c, "INSERT INTO t VALUES (1)")
			synced, err := c.SyncWAL()
			if err != nil || synced != tc.want {
				t.Fatalf("SyncWAL() = %v, %v; want %v, nil", synced, err, tc.want)
			}
		})
	}
	c, _ := openTemp(t)
	c.Close()
	if _, err := c.SyncWAL(); err == nil {
		t.Fatal("SyncWAL on a closed connection: no error")
	}
}

// TestOpenImmutable: a path with URI characters names exactly that file,
// and reading it leaves nothing beside it.
func TestOpenImmutable(t *testing.T) {
	for _, name := range []string{"plain.db", "a?mode=rw#x%41 b.db", "ünï cödé.db"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, name)
			c, err := Open(path, ReadWrite|Create)
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Exec("PRAGMA journal_mode=WAL; CREATE TABLE t(x); INSERT INTO t VALUES (42)"); err != nil {
				t.Fatal(err)
			}
			c.Close()
			r, err := OpenImmutable(path)
			if err != nil {
				t.Fatal(err)
			}
			st, _, err := r.Prepare("SELECT x FROM t")
			if err != nil {
				t.Fatal(err)
			}
			if row, err := st.Step(); !row || err != nil || st.ColumnInt64(0) != 42 {
				t.Fatalf("read %v %v %d", row, err, st.ColumnInt64(0))
			}
			st.Finalize()
			if err := r.Exec("INSERT INTO t VALUES (1)"); ErrorCode(err)&0xff != ResultReadOnly {
				t.Fatalf("write through the immutable connection: %v", err)
			}
			r.Close()
			entries, _ := os.ReadDir(dir)
			if len(entries) != 1 {
				t.Fatalf("files beside the database after reading it: %v", entries)
			}
		})
	}
}
