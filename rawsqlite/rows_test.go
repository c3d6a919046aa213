package rawsqlite

import (
	"errors"
	"fmt"
	"strings"
	"testing"
)

// rowsText reads every row as "v|v" lines, with each value's storage
// class, through Each.
func rowsText(st *Stmt, b *strings.Builder) {
	for i := range st.ColumnCount() {
		if i > 0 {
			b.WriteByte('|')
		}
		switch st.ColumnType(i) {
		case TypeNull:
			b.WriteString("NULL")
		case TypeBlob:
			fmt.Fprintf(b, "x'%x'", st.ColumnBlob(i))
		case TypeText:
			fmt.Fprintf(b, "'%s'", st.ColumnText(i))
		default:
			b.WriteString(st.ColumnText(i))
		}
	}
	b.WriteByte('\n')
}

// TestEach: every row reaches fn, args are bound in order, and every
// error (prepare, bind, step, fn, several statements) is returned with
// the statement finalized: the connection is left with none open.
func TestEach(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE t(a INTEGER PRIMARY KEY, b); INSERT INTO t VALUES (1, 'one'), (2, x'02'), (3, NULL), (4, 4.5)")
	errFn := errors.New("fn stops")
	for _, tt := range []struct {
		name, query string
		args        []any
		stopAt      int    // fn fails on this row (1-based); 0: never
		want        string // the rows fn saw
		wantErr     string // "" for none
		code        int    // the *Error's primary code, when there is one
	}{
		{name: "all rows", query: "SELECT a, b FROM t ORDER BY a", want: "1|'one'\n2|x'02'\n3|NULL\n4|4.5\n"},
		{name: "no rows", query: "SELECT a FROM t WHERE a > 9"},
		{name: "args in order", query: "SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7", args: []any{"s", int64(-2), 3, 1.5, []byte{1}, nil, true},
			want: "'s'|-2|3|1.5|x'01'|NULL|1\n"},
		{name: "a statement that returns nothing", query: "UPDATE t SET b = b WHERE a = ?1", args: []any{1}},
		{name: "a trailing semicolon", query: "SELECT 1;  ", want: "1\n"},
		{name: "fn's error", query: "SELECT a FROM t ORDER BY a", stopAt: 2, want: "1\n2\n", wantErr: "fn stops"},
		{name: "prepare fails", query: "SELECT nope FROM t", wantErr: "no such column: nope", code: ResultError},
		{name: "a step fails after rows", query: "SELECT CASE WHEN a < 3 THEN a ELSE abs(-9223372036854775807 - 1) END FROM t ORDER BY a",
			want: "1\n2\n", wantErr: "integer overflow", code: ResultError},
		{name: "a step fails at once", query: "SELECT json('{')", wantErr: "malformed JSON", code: ResultError},
		{name: "bind fails", query: "SELECT ?1", args: []any{struct{}{}}, wantErr: "cannot bind a struct {} (parameter 1)"},
		{name: "too many args", query: "SELECT ?1", args: []any{1, 2}, wantErr: "column index out of range", code: ResultRange},
		{name: "two statements", query: "SELECT 1; SELECT 2", wantErr: "more than one statement"},
		{name: "no statement", query: " -- nothing\n;", wantErr: "no statement"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			n := 0
			err := c.Each(tt.query, func(st *Stmt) error {
				n++
				rowsText(st, &b)
				if n == tt.stopAt {
					return errFn
				}
				return nil
			}, tt.args...)
			if b.String() != tt.want {
				t.Errorf("rows:\n%s\nwant:\n%s", b.String(), tt.want)
			}
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("error %v", err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Fatalf("error %v, want %q", err, tt.wantErr)
			case tt.stopAt > 0 && !errors.Is(err, errFn):
				t.Fatalf("fn's error came back as %v", err)
			case tt.code != 0:
				wantCode(t, err, tt.code)
			}
			if c.stmts != 0 {
				t.Fatalf("%d statements left unfinalized", c.stmts)
			}
		})
	}
	// A nil fn runs the statement to its end.
	if err := c.Each("DELETE FROM t WHERE a = ?1", nil, 4); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow("SELECT count(*) FROM t", func(st *Stmt) error {
		if n := st.ColumnInt64(0); n != 3 {
			return fmt.Errorf("%d rows after the delete, want 3", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// TestQueryRow: fn sees the first row only, no row is ErrNoRows, and the
// errors are Each's; the statement is finalized every time.
func TestQueryRow(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE t(a INTEGER PRIMARY KEY); INSERT INTO t VALUES (1), (2), (3)")
	errFn := errors.New("fn fails")
	for _, tt := range []struct {
		name, query string
		args        []any
		fail        bool
		want        string
		wantErr     error
		wantText    string
	}{
		{name: "first row only", query: "SELECT a FROM t ORDER BY a", want: "1\n"},
		{name: "bound", query: "SELECT a FROM t WHERE a = ?1", args: []any{int64(2)}, want: "2\n"},
		{name: "no row", query: "SELECT a FROM t WHERE a > 3", wantErr: ErrNoRows},
		{name: "fn's error", query: "SELECT a FROM t", fail: true, want: "1\n", wantErr: errFn},
		// The second row would fail: it is never stepped.
		{name: "later rows are not stepped", query: "SELECT CASE WHEN a = 1 THEN a ELSE json('{') END FROM t ORDER BY a", want: "1\n"},
		{name: "a step fails", query: "SELECT json('{')", wantText: "malformed JSON"},
		{name: "prepare fails", query: "SELECT FROM", wantText: "syntax error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var b strings.Builder
			err := c.QueryRow(tt.query, func(st *Stmt) error {
				rowsText(st, &b)
				if tt.fail {
					return errFn
				}
				return nil
			}, tt.args...)
			if b.String() != tt.want {
				t.Errorf("rows %q, want %q", b.String(), tt.want)
			}
			switch {
			case tt.wantErr != nil && !errors.Is(err, tt.wantErr):
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			case tt.wantText != "" && (err == nil || !strings.Contains(err.Error(), tt.wantText)):
				t.Fatalf("error %v, want %q", err, tt.wantText)
			case tt.wantErr == nil && tt.wantText == "" && err != nil:
				t.Fatalf("error %v", err)
			}
			if c.stmts != 0 {
				t.Fatalf("%d statements left unfinalized", c.stmts)
			}
		})
	}
}
