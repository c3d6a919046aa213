package search

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Column is one column of a table or view, as pragma_table_info lists it.
type Column struct {
	Name string
	Type string // declared type, "" when none
}

// Object is the table or view being searched.
type Object struct {
	Name         string // as stored in the schema
	View         bool
	WithoutRowid bool
	Columns      []Column
}

// Plan is the validated candidate query of one search.
type Plan struct {
	// SQL selects the key first, then Columns, from the object, filtered by
	// the agent's where text and limited to the candidate cap plus one row.
	SQL string
	// Key is the key expression as it appears in SQL (a quoted column or a
	// rowid alias).
	Key string
	// Columns are the searched columns, stored spelling, in request order.
	Columns []string
}

// IsText reports whether a declared type makes a column searched by
// default: it contains CHAR, TEXT or CLOB, or there is no type (SPEC 5.2).
func IsText(declType string) bool {
	t := strings.ToUpper(strings.TrimSpace(declType))
	return t == "" || strings.Contains(t, "CHAR") || strings.Contains(t, "TEXT") || strings.Contains(t, "CLOB")
}

// DefaultColumns returns the text columns of cols, in table order.
func DefaultColumns(cols []Column) []string {
	var names []string
	for _, c := range cols {
		if IsText(c.Type) {
			names = append(names, c.Name)
		}
	}
	return names
}

// NewPlan validates the requested columns and key against obj and builds
// the candidate SELECT. where is the agent's condition ("" for none);
// candidateCap > 0 adds LIMIT candidateCap+1, so the caller can tell
// whether the cap cut the scan. where is checked by SQLite when the SQL
// compiles and by CheckWhere after that.
func NewPlan(obj Object, columns []string, keyColumn, where string, candidateCap int) (Plan, error) {
	cols, err := ResolveColumns(obj, columns)
	if err != nil {
		return Plan{}, err
	}
	key, err := ResolveKey(obj, keyColumn)
	if err != nil {
		return Plan{}, err
	}
	var b strings.Builder
	b.WriteString("SELECT ")
	b.WriteString(key)
	for _, c := range cols {
		b.WriteString(", ")
		b.WriteString(rawsqlite.QuoteIdent(c))
	}
	b.WriteString(" FROM ")
	b.WriteString(rawsqlite.QuoteIdent(obj.Name))
	if strings.TrimSpace(where) != "" {
		// The closing parenthesis goes on its own line so that a trailing
		// "--" comment in where cannot swallow it.
		b.WriteString(" WHERE (")
		b.WriteString(where)
		b.WriteString("\n)")
	}
	if candidateCap > 0 {
		b.WriteString(" LIMIT ")
		b.WriteString(strconv.Itoa(candidateCap + 1))
	}
	return Plan{SQL: b.String(), Key: key, Columns: cols}, nil
}

// ResolveColumns maps the requested names to the object's columns, in
// request order without duplicates; no names means the text columns. An
// unknown name, or an object without text columns, is INVALID_ARGUMENT
// listing the real columns.
func ResolveColumns(obj Object, requested []string) ([]string, error) {
	if len(requested) == 0 {
		cols := DefaultColumns(obj.Columns)
		if len(cols) == 0 {
			return nil, invalid("%s %s has no text columns (declared CHAR, TEXT, CLOB or untyped); pass columns, from: %s",
				kind(obj), obj.Name, columnList(obj.Columns))
		}
		return cols, nil
	}
	var out []string
	seen := map[string]bool{}
	var unknown []string
	for _, name := range requested {
		c, ok := find(obj.Columns, name)
		if !ok {
			unknown = append(unknown, strconv.Quote(name))
			continue
		}
		if !seen[c.Name] {
			seen[c.Name] = true
			out = append(out, c.Name)
		}
	}
	if len(unknown) > 0 {
		noun := "column"
		if len(unknown) > 1 {
			noun = "columns"
		}
		return nil, invalid("%s %s has no %s %s; its columns are: %s",
			kind(obj), obj.Name, noun, strings.Join(unknown, ", "), columnList(obj.Columns))
	}
	return out, nil
}

// rowidNames are SQLite's spellings of the rowid; a real column of that
// name hides that spelling.
var rowidNames = []string{"rowid", "_rowid_", "oid"}

// ResolveKey returns the SQL of the key: the named column, quoted, or the
// rowid by default. Views and WITHOUT ROWID tables have no rowid.
func ResolveKey(obj Object, keyColumn string) (string, error) {
	hasRowid := !obj.View && !obj.WithoutRowid
	if keyColumn == "" {
		if !hasRowid {
			why := "a view has no rowid"
			if !obj.View {
				why = "a WITHOUT ROWID table has no rowid"
			}
			return "", invalid("%s; pass key_column, one of: %s", why, columnList(obj.Columns))
		}
		if alias, ok := freeRowid(obj.Columns); ok {
			return alias, nil
		}
		return "", invalid("table %s has columns named rowid, _rowid_ and oid, which hide its rowid; pass key_column, one of: %s",
			obj.Name, columnList(obj.Columns))
	}
	if c, ok := find(obj.Columns, keyColumn); ok {
		return rawsqlite.QuoteIdent(c.Name), nil
	}
	if hasRowid {
		for _, r := range rowidNames {
			if strings.EqualFold(keyColumn, r) {
				return r, nil
			}
		}
	}
	return "", invalid("%s %s has no column %q for key_column; its columns are: %s",
		kind(obj), obj.Name, keyColumn, columnList(obj.Columns))
}

func freeRowid(cols []Column) (string, bool) {
	for _, r := range rowidNames {
		if _, taken := find(cols, r); !taken {
			return r, true
		}
	}
	return "", false
}

// find looks a name up the way SQLite resolves identifiers: ignoring case.
func find(cols []Column, name string) (Column, bool) {
	for _, c := range cols {
		if strings.EqualFold(c.Name, name) {
			return c, true
		}
	}
	return Column{}, false
}

func kind(obj Object) string {
	if obj.View {
		return "view"
	}
	return "table"
}

func columnList(cols []Column) string {
	if len(cols) == 0 {
		return "(none)"
	}
	names := make([]string, len(cols))
	for i, c := range cols {
		names[i] = c.Name
	}
	return strings.Join(names, ", ")
}

func invalid(format string, a ...any) error {
	return errcode.New(errcode.InvalidArgument, fmt.Sprintf(format, a...))
}

// CheckWhere makes sure the where text stays inside the parentheses the
// candidate SELECT puts around it: outside string literals, quoted names
// and comments, no ")" closes more than the text opened, every "(" is
// closed, and no string, quoted name or block comment is left open. It
// reads SQLite's token rules for quotes and comments only; SQLite itself
// judges everything else when the statement compiles.
func CheckWhere(where string) error {
	depth := 0
	for i := 0; i < len(where); i++ {
		switch c := where[i]; c {
		case '(':
			depth++
		case ')':
			depth--
			if depth < 0 {
				return invalid("where closes a parenthesis it did not open; pass one condition on the rows, e.g. kind = 'note'")
			}
		case '\'', '"', '`', '[':
			end := byte(c)
			if c == '[' {
				end = ']'
			}
			// A doubled quote inside is two adjacent quoted runs, which
			// this loop reads the same way.
			j := strings.IndexByte(where[i+1:], end)
			if j < 0 {
				return invalid("where has an unterminated %c...%c; close it", c, end)
			}
			i += j + 1
		case '-':
			if i+1 < len(where) && where[i+1] == '-' {
				j := strings.IndexByte(where[i:], '\n')
				if j < 0 {
					return openParens(depth)
				}
				i += j
			}
		case '/':
			if i+1 < len(where) && where[i+1] == '*' {
				j := strings.Index(where[i+2:], "*/")
				if j < 0 {
					return invalid("where has an unterminated /* comment; close it with */")
				}
				i += j + 3
			}
		}
	}
	return openParens(depth)
}

// openParens reports parentheses left open at the end of the where text.
func openParens(depth int) error {
	if depth > 0 {
		return invalid("where leaves %d parenthesis(es) open; pass one complete condition", depth)
	}
	return nil
}

// Compile turns the agent's pattern into a matcher: RE2 syntax, or the
// literal text with fixedStrings, case-insensitive with ignoreCase. An
// empty or invalid pattern is INVALID_ARGUMENT with the parser's message.
// Line breaks in the pattern itself are marked as in the values
// (MarkNewlines), so that a two-line literal still finds its text.
func Compile(pattern string, ignoreCase, fixedStrings bool) (*regexp.Regexp, error) {
	if pattern == "" {
		return nil, invalid("pattern must not be empty")
	}
	expr := MarkNewlines(pattern)
	if fixedStrings {
		expr = regexp.QuoteMeta(expr)
	}
	if ignoreCase {
		expr = "(?i)" + expr
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return nil, invalid("pattern is not a valid RE2 regular expression: %s (pass fixed_strings=true to search for the text as it is)", err.Error())
	}
	return re, nil
}

// NewlineMark is what every line break of a value reads as in search_text
// (U+23CE RETURN SYMBOL), as in the reference server since 0.2.0: the
// pattern is matched against the marked text and the snippet shows it, so
// ".*" runs across lines, "⏎" itself can be searched, and a backslash-n in
// the text (LaTeX \nabla, a Windows path) is never mistaken for a break.
const NewlineMark = "\u23ce"

// MarkNewlines returns s with every line break (CR LF as one, LF, CR)
// replaced by NewlineMark; s itself when it has none.
func MarkNewlines(s string) string {
	breaks := strings.Count(s, "\n") + strings.Count(s, "\r")
	if breaks == 0 {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + breaks*(len(NewlineMark)-1))
	for {
		i := strings.IndexAny(s, "\r\n")
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(NewlineMark)
		if s[i] == '\r' && i+1 < len(s) && s[i+1] == '\n' {
			i++
		}
		s = s[i+1:]
	}
}

// Snippet shows the match s[start:end] with up to context characters of s
// on each side, and "..." where s goes on beyond them. s is the text the
// pattern matched, line breaks already marked (MarkNewlines). start and
// end must lie on character boundaries, as regexp's indexes do.
func Snippet(s string, start, end, context int) string {
	from := start
	for n := 0; n < context && from > 0; n++ {
		_, size := utf8.DecodeLastRuneInString(s[:from])
		from -= size
	}
	to := end
	for n := 0; n < context && to < len(s); n++ {
		_, size := utf8.DecodeRuneInString(s[to:])
		to += size
	}
	var b strings.Builder
	b.Grow(to - from + 6)
	if from > 0 {
		b.WriteString("...")
	}
	b.WriteString(s[from:to])
	if to < len(s) {
		b.WriteString("...")
	}
	return b.String()
}

// Totals are the counts of one search, for its trailer.
type Totals struct {
	Returned     int // rows of output
	Matches      int // matching values among the candidates
	MatchingRows int // candidate rows with at least one matching value
	Candidates   int // candidate rows scanned
	Columns      int // columns searched per row
	CandidateCap int
	CapHit       bool // a row past the candidate cap existed
	TruncatedAt  int  // the byte cap, when it cut the output; else 0
}

// AppendTrailer appends the totals line of SPEC 5.2, with no newline:
//
//	# R of M matching values in K rows (C candidate rows x N columns scanned)
//
// then "; candidate cap of CAP rows hit, tighten the WHERE filter" when the
// cap cut the scan and "; output truncated at B bytes" when the byte cap cut
// the output. A limit that cut the rows shows as R < M.
func AppendTrailer(dst []byte, t Totals) []byte {
	dst = fmt.Appendf(dst, "# %d of %d matching values in %d rows (%d candidate rows x %d columns scanned)",
		t.Returned, t.Matches, t.MatchingRows, t.Candidates, t.Columns)
	if t.CapHit {
		dst = fmt.Appendf(dst, "; candidate cap of %d rows hit, tighten the WHERE filter", t.CandidateCap)
	}
	if t.TruncatedAt > 0 {
		dst = fmt.Appendf(dst, "; output truncated at %d bytes", t.TruncatedAt)
	}
	return dst
}
