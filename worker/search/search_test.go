package search

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

func TestSnippet(t *testing.T) {
	tests := []struct {
		name    string
		s       string
		pattern string
		context int
		want    string
	}{
		{"whole value", "hello world", "world", 80, "hello world"},
		{"match at start", "needle and then a long tail", "needle", 4, "needle and..."},
		{"match at end", "a long head then needle", "needle", 5, "...then needle"},
		{"cut both sides", "0123456789needle0123456789", "needle", 3, "...789needle012..."},
		{"zero context", "abc needle def", "needle", 0, "...needle..."},
		{"zero context whole value", "needle", "needle", 0, "needle"},
		{"first of several matches", "x cat y cat z", "cat", 2, "x cat y..."},
		{"first match wins even if later is longer", "ab abbbb", "ab+", 1, "ab ..."},
		{"multibyte context counted in runes", "éééXééé", "X", 2, "...ééXéé..."},
		{"multibyte match", "日本語のテキスト", "テキ", 1, "...のテキス..."},
		{"emoji never split", "😀😀😀needle😀😀😀", "needle", 1, "...😀needle😀..."},
		{"four-byte rune at the edge", "😀needle", "needle", 1, "😀needle"},
		{"newline counts as one char", "ab⏎needle", "needle", 1, "...⏎needle"},
		{"backslash kept as is", `C:\dir\needle`, "needle", 1, `...\needle`},
		{"empty match at start", "abc", "x*", 1, "a..."},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re, err := Compile(tt.pattern, false, false)
			if err != nil {
				t.Fatal(err)
			}
			loc := re.FindStringIndex(tt.s)
			if loc == nil {
				t.Fatalf("%q does not match %q", tt.pattern, tt.s)
			}
			got := Snippet(tt.s, loc[0], loc[1], tt.context)
			if got != tt.want {
				t.Errorf("Snippet = %q, want %q", got, tt.want)
			}
			if !utf8.ValidString(got) {
				t.Errorf("snippet %q is not valid UTF-8", got)
			}
		})
	}
}

// TestSnippetNeverSplitsRunes cuts at every context width around a match in
// mixed-width text.
func TestSnippetNeverSplitsRunes(t *testing.T) {
	s := "aé日😀b|MATCH|😀日éab"
	start := strings.Index(s, "MATCH")
	end := start + len("MATCH")
	for ctx := 0; ctx <= 12; ctx++ {
		got := Snippet(s, start, end, ctx)
		if !utf8.ValidString(got) {
			t.Fatalf("context %d: invalid UTF-8 %q", ctx, got)
		}
		inner := strings.TrimSuffix(strings.TrimPrefix(got, "..."), "...")
		before, after, _ := strings.Cut(inner, "MATCH")
		if n := utf8.RuneCountInString(before); n != min(ctx, 6) {
			t.Errorf("context %d: %d runes before in %q", ctx, n, got)
		}
		if n := utf8.RuneCountInString(after); n != min(ctx, 6) {
			t.Errorf("context %d: %d runes after in %q", ctx, n, got)
		}
	}
}

// TestNewlineMarks: every line break of a value reads as ⏎ where the
// pattern matches and in the snippet (SPEC 5.2), so a pattern runs across
// lines and a backslash-n in the text stays what it is.
func TestNewlineMarks(t *testing.T) {
	tests := []struct {
		name, value, pattern string
		fixed                bool
		context              int
		want                 string // "" when nothing may match
	}{
		{"LF", "line1\nneedle\nline3", "needle", false, 80, "line1⏎needle⏎line3"},
		{"CRLF is one break", "a\r\nneedle", "needle", false, 2, "a⏎needle"},
		{"lone CR", "a\rneedle", "needle", false, 1, "...⏎needle"},
		{"LF CR is two breaks", "a\n\rneedle", "needle", false, 2, "...⏎⏎needle"},
		{"dot-star across lines", "Courant-Fischer:\n$\\dim S = k$", "Courant.*dim", false, 2, "Courant-Fischer:⏎$\\dim S..."},
		{"the mark can be searched", "first\r\nsecond", "t⏎s", true, 1, "...st⏎se..."},
		{"backslash-n text is no break", `$\dim S = k$?⏎Second line with \nabla f`, `\\nabla`, false, 5, "...with \\nabla f"},
		{"RE2 \\n matches no break", "one\ntwo", `one\ntwo`, false, 0, ""},
		{"a two-line literal finds its text", "x\r\ny", "x\ny", true, 0, "x⏎y"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re, err := Compile(tt.pattern, false, tt.fixed)
			if err != nil {
				t.Fatal(err)
			}
			v := MarkNewlines(tt.value)
			loc := re.FindStringIndex(v)
			if tt.want == "" {
				if loc != nil {
					t.Fatalf("%q matched %q at %v", tt.pattern, v, loc)
				}
				return
			}
			if loc == nil {
				t.Fatalf("%q does not match %q", tt.pattern, v)
			}
			if got := Snippet(v, loc[0], loc[1], tt.context); got != tt.want {
				t.Errorf("Snippet = %q, want %q", got, tt.want)
			}
		})
	}
	if s := "no breaks"; MarkNewlines(s) != s {
		t.Error("a value without breaks changed")
	}
}

func TestSnippetInvalidUTF8(t *testing.T) {
	s := "\xff\xfeneedle\xff"
	got := Snippet(s, 2, 8, 1)
	if got != "...\xfeneedle\xff" {
		t.Fatalf("got %q", got)
	}
}

func TestCompile(t *testing.T) {
	tests := []struct {
		name                string
		pattern             string
		ignoreCase, fixed   bool
		match, noMatch, err string
	}{
		{name: "regex", pattern: `b[aeiou]g`, match: "big", noMatch: "bxg"},
		{name: "ignore case", pattern: "hello", ignoreCase: true, match: "HeLLo"},
		{name: "case sensitive by default", pattern: "hello", noMatch: "HELLO"},
		{name: "fixed strings quote metacharacters", pattern: "a.b*(c)?[d]", fixed: true, match: "x a.b*(c)?[d] y", noMatch: "aab(c)d"},
		{name: "fixed and ignore case", pattern: "C++", fixed: true, ignoreCase: true, match: "c++ rocks", noMatch: "cc"},
		{name: "bad regex", pattern: "(a", err: "missing closing )"},
		{name: "bad repeat", pattern: "a**", err: "invalid nested repetition operator"},
		{name: "bad regex is fine as fixed string", pattern: "(a", fixed: true, match: "f(a)"},
		{name: "empty", pattern: "", err: "must not be empty"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			re, err := Compile(tt.pattern, tt.ignoreCase, tt.fixed)
			if tt.err != "" {
				if err == nil || errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("got %v, want INVALID_ARGUMENT with %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if tt.match != "" && !re.MatchString(tt.match) {
				t.Errorf("%q does not match %q", re, tt.match)
			}
			if tt.noMatch != "" && re.MatchString(tt.noMatch) {
				t.Errorf("%q matches %q", re, tt.noMatch)
			}
		})
	}
}

func TestIsTextAndDefaultColumns(t *testing.T) {
	tests := []struct {
		typ  string
		text bool
	}{
		{"TEXT", true}, {"text", true}, {"VARCHAR(20)", true}, {"NVARCHAR", true},
		{"CHARACTER(10)", true}, {"CLOB", true}, {"", true}, {"  ", true},
		{"INTEGER", false}, {"INT", false}, {"REAL", false}, {"BLOB", false},
		{"NUMERIC", false}, {"DATE", false}, {"BOOLEAN", false}, {"DOUBLE", false},
		{"JSON", false}, {"LONGTEXT", true}, {"MEDIUMCLOB", true},
	}
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			if got := IsText(tt.typ); got != tt.text {
				t.Errorf("IsText(%q) = %v, want %v", tt.typ, got, tt.text)
			}
		})
	}
	cols := []Column{{"id", "INTEGER"}, {"name", "TEXT"}, {"price", "REAL"}, {"notes", ""}, {"code", "varchar(8)"}, {"data", "BLOB"}}
	if got, want := strings.Join(DefaultColumns(cols), ","), "name,notes,code"; got != want {
		t.Errorf("DefaultColumns = %s, want %s", got, want)
	}
}

var weird = Object{Name: `my "odd" table`, Columns: []Column{
	{"id", "INTEGER"},
	{"first name", "TEXT"},
	{`say "hi"`, "TEXT"},
	{"select", "TEXT"},
	{"Order", "VARCHAR"},
	{"n", "INT"},
}}

func TestResolveColumns(t *testing.T) {
	tests := []struct {
		name string
		obj  Object
		req  []string
		want string // joined with |, or the error text
		err  bool
	}{
		{"default", weird, nil, `first name|say "hi"|select|Order`, false},
		{"space in a name", weird, []string{"first name"}, "first name", false},
		{"quote in a name", weird, []string{`say "hi"`}, `say "hi"`, false},
		{"keyword as a name", weird, []string{"select", "order"}, "select|Order", false},
		{"case-insensitive, stored spelling", weird, []string{"ORDER"}, "Order", false},
		{"numeric column by name", weird, []string{"n"}, "n", false},
		{"duplicates dropped", weird, []string{"n", "N", "select"}, "n|select", false},
		{"unknown", weird, []string{"nope"}, `table my "odd" table has no column "nope"; its columns are: id, first name, say "hi", select, Order, n`, true},
		{"several unknown", weird, []string{"a", "select", "b"}, `has no columns "a", "b"`, true},
		{"quoted spelling is not the name", weird, []string{`"select"`}, `no column "\"select\""`, true},
		{"injection attempt is just an unknown name", weird, []string{`id" FROM x; --`}, "INVALID_ARGUMENT", true},
		{"empty name", weird, []string{""}, `no column ""`, true},
		{"no text columns", Object{Name: "nums", Columns: []Column{{"a", "INTEGER"}}}, nil, "has no text columns", true},
		{"view default", Object{Name: "v", View: true, Columns: []Column{{"x", ""}, {"y", "INT"}}}, nil, "x", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveColumns(tt.obj, tt.req)
			if tt.err {
				if err == nil || errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %v, %v; want INVALID_ARGUMENT containing %q", got, err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s := strings.Join(got, "|"); s != tt.want {
				t.Errorf("got %s, want %s", s, tt.want)
			}
		})
	}
}

func TestResolveKey(t *testing.T) {
	view := Object{Name: "v", View: true, Columns: []Column{{"id", "INTEGER"}, {"body", "TEXT"}}}
	wr := Object{Name: "w", WithoutRowid: true, Columns: []Column{{"k", "TEXT"}, {"v", "TEXT"}}}
	shadowed := Object{Name: "s", Columns: []Column{{"rowid", "TEXT"}, {"v", "TEXT"}}}
	allShadowed := Object{Name: "s", Columns: []Column{{"rowid", ""}, {"_rowid_", ""}, {"OID", ""}}}
	tests := []struct {
		name string
		obj  Object
		key  string
		want string
		err  bool
	}{
		{"table default", weird, "", "rowid", false},
		{"named column quoted", weird, "first name", `"first name"`, false},
		{"quote doubled", weird, `SAY "HI"`, `"say ""hi"""`, false},
		{"keyword quoted", weird, "select", `"select"`, false},
		{"explicit rowid", weird, "ROWID", "rowid", false},
		{"explicit oid", weird, "oid", "oid", false},
		{"rowid shadowed by a column", shadowed, "", "_rowid_", false},
		{"column named rowid", shadowed, "rowid", `"rowid"`, false},
		{"every alias shadowed", allShadowed, "", "hide its rowid", true},
		{"unknown key", weird, "nope", `no column "nope" for key_column; its columns are: id,`, true},
		{"view needs key_column", view, "", "a view has no rowid; pass key_column, one of: id, body", true},
		{"view has no rowid", view, "rowid", "view v has no column", true},
		{"view with key", view, "id", `"id"`, false},
		{"without rowid needs key", wr, "", "WITHOUT ROWID", true},
		{"without rowid with key", wr, "k", `"k"`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ResolveKey(tt.obj, tt.key)
			if tt.err {
				if err == nil || errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("got %q, %v; want INVALID_ARGUMENT containing %q", got, err, tt.want)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("got %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestNewPlan(t *testing.T) {
	tests := []struct {
		name, key, where string
		cols             []string
		limit            int
		want             string
	}{
		{"defaults", "", "", nil, 0, `SELECT rowid, "first name", "say ""hi""", "select", "Order" FROM "my ""odd"" table"`},
		{"where and cap", "id", "n > 3 -- big ones", []string{"select"}, 10, "SELECT \"id\", \"select\" FROM \"my \"\"odd\"\" table\" WHERE (n > 3 -- big ones\n) LIMIT 11"},
		{"blank where ignored", "", "  ", []string{"n"}, 5, `SELECT rowid, "n" FROM "my ""odd"" table" LIMIT 6`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := NewPlan(weird, tt.cols, tt.key, tt.where, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if p.SQL != tt.want {
				t.Errorf("SQL\n got %s\nwant %s", p.SQL, tt.want)
			}
		})
	}
	if _, err := NewPlan(weird, []string{"nope"}, "", "", 1); errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("unknown column: %v", err)
	}
	if _, err := NewPlan(Object{Name: "v", View: true, Columns: []Column{{"a", ""}}}, nil, "", "", 1); errcode.Of(err) != errcode.InvalidArgument {
		t.Errorf("view without key: %v", err)
	}
}

func TestCheckWhere(t *testing.T) {
	tests := []struct {
		where string
		err   string // "" means accepted
	}{
		{"kind = 'note'", ""},
		{"(a = 1 OR b = 2) AND c IN (SELECT x FROM y)", ""},
		{"name = 'a)b'", ""},
		{"name = 'it''s (' AND 1", ""},
		{`"odd)col" = 1`, ""},
		{"`odd)col` = 1", ""},
		{"[odd)col] = 1", ""},
		{"x = 1 -- a comment with )", ""},
		{"x = 1 -- )\n AND (y = 2)", ""},
		{"x = 1 /* ) */", ""},
		{"a - -b = 1 AND c/2 = 1", ""},
		{"1) UNION SELECT 1, name FROM sqlite_schema --", "closes a parenthesis"},
		{"1) UNION SELECT 1, 'x' /*", "closes a parenthesis"},
		{"1); DELETE FROM t; --", "closes a parenthesis"},
		{"(1", "open"},
		{"name = 'abc", "unterminated '"},
		{`"abc = 1`, `unterminated "`},
		{"[abc = 1", "unterminated ["},
		{"x = 1 /* open", "unterminated /*"},
		{"x = 1 -- ) only a comment", ""},
	}
	for _, tt := range tests {
		t.Run(tt.where, func(t *testing.T) {
			err := CheckWhere(tt.where)
			if tt.err == "" {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			if err == nil || errcode.Of(err) != errcode.InvalidArgument || !strings.Contains(err.Error(), tt.err) {
				t.Fatalf("got %v, want INVALID_ARGUMENT with %q", err, tt.err)
			}
		})
	}
}

func TestAppendTrailer(t *testing.T) {
	tests := []struct {
		name string
		t    Totals
		want string
	}{
		{"plain", Totals{Returned: 2, Matches: 2, MatchingRows: 1, Candidates: 10, Columns: 3, CandidateCap: 5000},
			"# 2 of 2 matching values in 1 rows (10 candidate rows x 3 columns scanned)"},
		{"cap hit", Totals{Returned: 0, Matches: 0, Candidates: 10, Columns: 1, CandidateCap: 10, CapHit: true},
			"# 0 of 0 matching values in 0 rows (10 candidate rows x 1 columns scanned); candidate cap of 10 rows hit, tighten the WHERE filter"},
		{"cap and bytes", Totals{Returned: 3, Matches: 40, MatchingRows: 39, Candidates: 10, Columns: 2, CandidateCap: 10, CapHit: true, TruncatedAt: 256},
			"# 3 of 40 matching values in 39 rows (10 candidate rows x 2 columns scanned); candidate cap of 10 rows hit, tighten the WHERE filter; output truncated at 256 bytes"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(AppendTrailer(nil, tt.t)); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
		})
	}
}
