package tests

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// searchArgs builds search_text arguments; extra holds key/value pairs.
func searchArgs(pattern, table string, extra ...any) map[string]any {
	m := map[string]any{"pattern": pattern, "table": table}
	for i := 0; i+1 < len(extra); i += 2 {
		m[extra[i].(string)] = extra[i+1]
	}
	return m
}

func seedDocs(s *session) {
	s.t.Helper()
	s.ok("write_query", q(`CREATE TABLE docs (id INTEGER PRIMARY KEY, title TEXT, body TEXT, kind VARCHAR(10), n INTEGER, data BLOB)`))
	s.ok("write_query", q(`INSERT INTO docs (title, body, kind, n, data) VALUES
		('Big news', 'the big bag is here', 'note', 7, x'626967'),
		('small', 'nothing here', 'note', 8, NULL),
		('Line test', 'first line
second BIG line', 'log', NULL, NULL),
		('price', 'costs a.b*(c)? dollars', 'log', 9, NULL),
		(NULL, NULL, 'note', 10, x'00'),
		('BUG report', 'ünïcödé bug 😀 here', 'bug', 11, NULL)`))
}

func TestSearchText(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	seedDocs(s)

	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"regex over default text columns", searchArgs(`b[aeiou]g`, "docs"),
			"key,column,snippet\n1,body,the big bag is here\n6,body,ünïcödé bug 😀 here\n6,kind,bug\n" +
				"# 3 of 3 matching values in 2 rows (6 candidate rows x 3 columns scanned)"},
		{"ignore_case finds titles and the multi-line body", searchArgs(`b[aeiou]g`, "docs", "ignore_case", true, "context_chars", 6),
			"key,column,snippet\n1,title,Big news\n1,body,the big bag i...\n3,body,...econd BIG line\n6,title,BUG repor...\n6,body,...ïcödé bug 😀 her...\n6,kind,bug\n" +
				"# 6 of 6 matching values in 3 rows (6 candidate rows x 3 columns scanned)"},
		{"newline shown as ⏎", searchArgs(`line`, "docs", "columns", []any{"body"}, "context_chars", 7),
			"key,column,snippet\n3,body,first line⏎second...\n" +
				"# 1 of 1 matching values in 1 rows (6 candidate rows x 1 columns scanned)"},
		{"fixed_strings with metacharacters", searchArgs(`a.b*(c)?`, "docs", "fixed_strings", true, "context_chars", 3),
			"key,column,snippet\n4,body,...ts a.b*(c)? do...\n" +
				"# 1 of 1 matching values in 1 rows (6 candidate rows x 3 columns scanned)"},
		{"where narrows the candidates", searchArgs(`(?i)big`, "docs", "where", "kind = 'log'"),
			"key,column,snippet\n3,body,first line⏎second BIG line\n" +
				"# 1 of 1 matching values in 1 rows (2 candidate rows x 3 columns scanned)"},
		{"numbers are searched, blobs are not", searchArgs(`^(9|big)$`, "docs", "columns", []any{"n", "data"}),
			"key,column,snippet\n4,n,9\n" +
				"# 1 of 1 matching values in 1 rows (6 candidate rows x 2 columns scanned)"},
		{"limit cuts rows, totals go on", searchArgs(`e`, "docs", "columns", []any{"body"}, "limit", 1, "context_chars", 0),
			"key,column,snippet\n1,body,...e...\n" +
				"# 1 of 4 matching values in 4 rows (6 candidate rows x 1 columns scanned)"},
		{"key_column and stored spelling of names", searchArgs(`news`, "DOCS", "columns", []any{"TITLE"}, "key_column", "Kind"),
			"key,column,snippet\nnote,title,Big news\n" +
				"# 1 of 1 matching values in 1 rows (6 candidate rows x 1 columns scanned)"},
		{"no match", searchArgs(`zebra`, "docs"),
			"key,column,snippet\n# 0 of 0 matching values in 0 rows (6 candidate rows x 3 columns scanned)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// s.ok would fail the parent test; report here instead.
			if got, isErr := s.call("search_text", tt.args); isErr || got != tt.want {
				t.Errorf("got (error=%v):\n%s\nwant:\n%s", isErr, got, tt.want)
			}
		})
	}

	t.Run("views need key_column", func(t *testing.T) {
		if text, isErr := s.call("create_view", map[string]any{"name": "notes", "select_sql": "SELECT id AS doc, upper(title) AS loud, body FROM docs WHERE kind = 'note'"}); isErr {
			t.Fatal(text)
		}
		if text, isErr := s.call("search_text", searchArgs(`BIG`, "notes")); !isErr || !strings.HasPrefix(text, "INVALID_ARGUMENT: a view has no rowid; pass key_column, one of: doc, loud, body") {
			t.Errorf("view without key_column: (error=%v) %q", isErr, text)
		}
		want := "key,column,snippet\n1,loud,BIG NEWS\n# 1 of 1 matching values in 1 rows (3 candidate rows x 2 columns scanned)"
		if got, isErr := s.call("search_text", searchArgs(`BIG`, "notes", "key_column", "doc")); isErr || got != want {
			t.Errorf("got (error=%v):\n%s\nwant:\n%s", isErr, got, want)
		}
	})

	t.Run("fts5 and WITHOUT ROWID tables", func(t *testing.T) {
		for _, sql := range []string{
			"CREATE VIRTUAL TABLE ft USING fts5(body)",
			"INSERT INTO ft (body) VALUES ('alpha beta'), ('gamma delta')",
			"CREATE TABLE kv (k TEXT PRIMARY KEY, v TEXT) WITHOUT ROWID",
			"INSERT INTO kv VALUES ('one', 'delta wing'), ('two', 'beta')",
		} {
			if text, isErr := s.call("write_query", q(sql)); isErr {
				t.Fatal(text)
			}
		}
		want := "key,column,snippet\n2,body,gamma delta\n# 1 of 1 matching values in 1 rows (2 candidate rows x 1 columns scanned)"
		if got, isErr := s.call("search_text", searchArgs(`delta`, "ft")); isErr || got != want {
			t.Errorf("fts5: got (error=%v) %q", isErr, got)
		}
		if text, isErr := s.call("search_text", searchArgs(`delta`, "kv")); !isErr || !strings.Contains(text, "WITHOUT ROWID table has no rowid; pass key_column") {
			t.Errorf("WITHOUT ROWID: got (error=%v) %q", isErr, text)
		}
		want = "key,column,snippet\none,v,delta wing\n# 1 of 1 matching values in 1 rows (2 candidate rows x 2 columns scanned)"
		if got, isErr := s.call("search_text", searchArgs(`delta`, "kv", "key_column", "k")); isErr || got != want {
			t.Errorf("WITHOUT ROWID with key: got (error=%v) %q", isErr, got)
		}
	})

	errs := []struct {
		name string
		args map[string]any
		code string
		msg  string
	}{
		{"bad regex", searchArgs(`(a`, "docs"), "INVALID_ARGUMENT", "missing closing )"},
		{"empty pattern", searchArgs(``, "docs"), "INVALID_ARGUMENT", "pattern"},
		{"unknown table", searchArgs(`x`, "nope"), "TABLE_NOT_FOUND", "nope"},
		{"unknown column", searchArgs(`x`, "docs", "columns", []any{"body", "nope"}), "INVALID_ARGUMENT", `no column "nope"; its columns are: id, title, body, kind, n, data`},
		{"unknown key column", searchArgs(`x`, "docs", "key_column", "nope"), "INVALID_ARGUMENT", "key_column"},
		{"bad where", searchArgs(`x`, "docs", "where", "nope = 1"), "SQL_ERROR", "no such column: nope"},
		{"where smuggles a delete", searchArgs(`x`, "docs", "where", "1); DELETE FROM docs; --"), "MULTIPLE_STATEMENTS", ""},
		{"where smuggles an attach", searchArgs(`x`, "docs", "where", "1); ATTACH 'evil.db' AS evil; --"), "MULTIPLE_STATEMENTS", ""},
		{"where reads a forbidden function", searchArgs(`x`, "docs", "where", "load_extension('/tmp/evil') IS NULL"), "POLICY_VIOLATION", ""},
		{"where reshapes the query", searchArgs(`x`, "docs", "where", "1) UNION SELECT 1, 2, 3, 'x' /*"), "INVALID_ARGUMENT", "parenthesis"},
		{"where reshapes the query, parentheses rebalanced", searchArgs(`x`, "docs", "where", "1) UNION SELECT 1, 2, 3, (4"), "INVALID_ARGUMENT", "parenthesis"},
		{"where reshapes the query, other column count", searchArgs(`x`, "docs", "where", "1) UNION SELECT 1, (2"), "SQL_ERROR", "number of result columns"},
		{"where comments out the closing parenthesis", searchArgs(`x`, "docs", "where", "1) UNION SELECT 1, 2 --"), "SQL_ERROR", "syntax error"},
	}
	before := dump(t, db, "docs")
	for _, tt := range errs {
		t.Run(tt.name, func(t *testing.T) {
			text, isErr := s.call("search_text", tt.args)
			if !isErr || !strings.HasPrefix(text, tt.code+": ") || !strings.Contains(text, tt.msg) {
				t.Errorf("got (error=%v) %q, want a %s error saying %q", isErr, text, tt.code, tt.msg)
			}
		})
	}
	if after := dump(t, db, "docs"); after != before {
		t.Fatal("a refused search changed the table")
	}
	if got := s.ok("read_query", q("SELECT count(*) AS n FROM pragma_database_list")); got != "n\n1\n# 1 rows" {
		t.Fatalf("something got attached: %q", got)
	}
}

func TestSearchAudit(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	seedDocs(s)
	s.ok("search_text", searchArgs(`big`, "docs", "columns", []any{"body"}, "where", "kind = 'note'"))
	s.audited(db)
	var detail string
	if err := openDirect(t, db).QueryRow(`SELECT detail FROM query_log WHERE tool = 'search_text' AND ok = 1 ORDER BY id DESC LIMIT 1`).Scan(&detail); err != nil {
		t.Fatal(err)
	}
	var d struct {
		SQL    string         `json:"sql"`
		Search map[string]any `json:"search"`
	}
	if err := json.Unmarshal([]byte(detail), &d); err != nil {
		t.Fatalf("detail %q: %v", detail, err)
	}
	if want := "SELECT rowid, \"body\" FROM \"docs\" WHERE (kind = 'note'\n) LIMIT 5001"; d.SQL != want {
		t.Errorf("audited sql %q, want %q", d.SQL, want)
	}
	if d.Search["pattern"] != "big" || d.Search["where"] != "kind = 'note'" {
		t.Errorf("audited parameters %v", d.Search)
	}
	// A refused search still tells its audit row the SQL it built.
	s.fails("search_text", searchArgs(`big`, "docs", "where", "1; DROP TABLE docs"), "SQL_ERROR")
	s.audited(db)
	var failedSQL string
	if err := openDirect(t, db).QueryRow(`SELECT json_extract(detail, '$.sql') FROM query_log WHERE tool = 'search_text' AND ok = 0 ORDER BY id DESC LIMIT 1`).Scan(&failedSQL); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(failedSQL, "WHERE (1; DROP TABLE docs") {
		t.Errorf("audited sql of the refused search: %q", failedSQL)
	}
}

func TestSearchCandidateCap(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t), "--search-candidates", "10")
	s.ok("write_query", q("CREATE TABLE t (v TEXT)"))
	s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 50) INSERT INTO t SELECT 'row ' || x FROM c"))
	want := "key,column,snippet\n3,v,row 3\n# 1 of 1 matching values in 1 rows (10 candidate rows x 1 columns scanned); candidate cap of 10 rows hit, tighten the WHERE filter"
	if got := s.ok("search_text", searchArgs(`^row 3\d*$`, "t")); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// Exactly the cap (rows 26..35 but 3): not hit.
	want = "key,column,snippet\n30,v,row 30\n31,v,row 31\n32,v,row 32\n33,v,row 33\n34,v,row 34\n35,v,row 35\n" +
		"# 6 of 6 matching values in 6 rows (10 candidate rows x 1 columns scanned)"
	if got := s.ok("search_text", searchArgs(`^row 3\d*$`, "t", "where", "rowid > 25 AND rowid <= 35 AND v <> 'row 3'")); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// The where filter moves the window; rows 40 and on are still unread.
	want = "key,column,snippet\n38,v,row 38\n39,v,row 39\n# 2 of 2 matching values in 2 rows (10 candidate rows x 1 columns scanned); candidate cap of 10 rows hit, tighten the WHERE filter"
	if got := s.ok("search_text", searchArgs(`^row (3[89]|4\d)$`, "t", "where", "rowid >= 30")); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestSearchByteCap(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t), "--max-result-bytes", "256")
	s.ok("write_query", q("CREATE TABLE t (v TEXT)"))
	s.ok("write_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 40) INSERT INTO t SELECT printf('%050d needle', x) FROM c"))
	got := s.ok("search_text", searchArgs(`needle`, "t"))
	lines := strings.Split(got, "\n")
	trailer := lines[len(lines)-1]
	want := fmt.Sprintf("# %d of 40 matching values in 40 rows (40 candidate rows x 1 columns scanned); output truncated at 256 bytes", len(lines)-2)
	if trailer != want || len(got)-len(trailer) > 256 {
		t.Errorf("got:\n%s\nwant trailer %s", got, want)
	}
}

// TestSearchPathologicalPattern runs a pattern that makes backtracking
// engines explode over a large table: RE2 stays linear, the timeout stops
// the scan, and the server keeps serving.
func TestSearchPathologicalPattern(t *testing.T) {
	// Not parallel: it bounds how soon the scan is stopped, which other tests on the 2 cores would skew.
	db := newDB(t)
	s := start(t, db, "--query-timeout", "1", "--search-candidates", "10000000")
	// The table is built directly, as another program would: through the
	// tools, each batch would have to fit in the one-second timeout, which
	// a loaded machine (or Wine) does not promise.
	if _, err := openDirect(t, db).Exec("CREATE TABLE big (v TEXT); WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 200000) INSERT INTO big SELECT printf('%.300c', 'a') FROM c"); err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	// A full scan takes several seconds: linear, but far from instant.
	text := s.fails("search_text", searchArgs(`(a|aa)*(a|aa)*(a|aa)*c`, "big"), "TIMEOUT")
	if d := time.Since(begin); d > 3*time.Second {
		t.Errorf("stopped after %s", d)
	}
	if !strings.Contains(text, "1s") {
		t.Errorf("timeout text: %q", text)
	}
	// max(rowid), not count(*): a full scan of the 60 MB table may itself
	// pass the 1 s timeout under Wine.
	if got := s.ok("read_query", q("SELECT max(rowid) AS n FROM big")); got != "n\n200000\n# 1 rows" {
		t.Fatalf("after the timeout: %q", got)
	}
	s.audited(db)
	if tool, ok, e := lastAuditN(t, db, 2); tool != "search_text" || ok || !strings.HasPrefix(e, "TIMEOUT") {
		t.Fatalf("audit of the timeout: %s %v %q", tool, ok, e)
	}
}

// TestSearchTextNewlineMarks: as in the reference since 0.2.0, every line
// break of a value (CR LF, LF, CR) reads as ⏎ where the pattern matches and
// in the snippet, so a pattern runs across lines, ⏎ finds a break, and a
// backslash-n in the text (LaTeX \nabla) is never mistaken for one.
func TestSearchTextNewlineMarks(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes (body) VALUES "+
		"('Courant-Fischer: is $\\dim S = k$?' || char(10) || 'Second line with \\nabla f'), "+
		"('windows' || char(13, 10) || 'line ' || char(13) || 'old mac'), "+
		"('C:\\new\\notes.txt')"))
	tests := []struct {
		name string
		args map[string]any
		want string
	}{
		{"dot-star across a line break", searchArgs(`Courant.*Second`, "notes", "context_chars", 4),
			"key,column,snippet\n1,body,Courant-Fischer: is $\\dim S = k$?⏎Second lin...\n" +
				"# 1 of 1 matching values in 1 rows (3 candidate rows x 1 columns scanned)"},
		{"the mark itself is searched; CRLF is one", searchArgs(`⏎`, "notes", "context_chars", 3),
			"key,column,snippet\n1,body,...k$?⏎Sec...\n2,body,...ows⏎lin...\n" +
				"# 2 of 2 matching values in 2 rows (3 candidate rows x 1 columns scanned)"},
		{"backslash-n text stays text", searchArgs(`\nabla`, "notes", "fixed_strings", true, "context_chars", 80),
			"key,column,snippet\n1,body,Courant-Fischer: is $\\dim S = k$?⏎Second line with \\nabla f\n" +
				"# 1 of 1 matching values in 1 rows (3 candidate rows x 1 columns scanned)"},
		{"a lone CR is a break too", searchArgs(`line ⏎old`, "notes", "context_chars", 0),
			"key,column,snippet\n2,body,...line ⏎old...\n" +
				"# 1 of 1 matching values in 1 rows (3 candidate rows x 1 columns scanned)"},
		{"a path's \\n is no break", searchArgs(`\\new\\`, "notes", "context_chars", 2),
			"key,column,snippet\n3,body,C:\\new\\no...\n" +
				"# 1 of 1 matching values in 1 rows (3 candidate rows x 1 columns scanned)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, isErr := s.call("search_text", tt.args); isErr || got != tt.want {
				t.Errorf("got (error=%v):\n%s\nwant:\n%s", isErr, got, tt.want)
			}
		})
	}
}
