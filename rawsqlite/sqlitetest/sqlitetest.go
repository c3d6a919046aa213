// Package sqlitetest holds the helpers tests use to set up SQLite files
// and compare them before and after: running set-up SQL on a file, reading
// rows as values or text, and hashing a file's bytes.
//
// Only _test.go files import it (TestOnlyTestsImportIt checks). The tests
// of package rawsqlite itself cannot: this package imports rawsqlite, so
// they keep their own small helpers.
package sqlitetest

import (
	"crypto/sha256"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	_ "modernc.org/sqlite" // the "sqlite" driver of FileRows

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// FileDigest is the SHA-256 of the file's bytes. Call it only while the
// test holds no SQLite connection to the file: closing any other
// descriptor of a database file drops the POSIX locks SQLite holds on it
// in this process.
func FileDigest(t testing.TB, path string) [32]byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return sha256.Sum256(b)
}

// ExecFile runs sqlText (any number of statements) on the database file
// at path, creating it if it is missing, on a connection of its own that
// it closes before it returns.
func ExecFile(t testing.TB, path, sqlText string) {
	t.Helper()
	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(sqlText); err != nil {
		t.Fatalf("%v\n%s", err, sqlText)
	}
}

// ConnRows runs query on c and returns its rows as text, one string a
// row, each value with its storage class and exact bytes: "|N" for NULL,
// "|B" and the SHA-256 of a blob, "|T:text" otherwise, where T is the
// storage class's number (1 integer, 2 real, 3 text). Two rows are equal
// as text only when SQLite holds the same values.
func ConnRows(t testing.TB, c *rawsqlite.Conn, query string) []string {
	t.Helper()
	st, _, err := c.Prepare(query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer st.Finalize()
	var rows []string
	for {
		row, err := st.Step()
		if err != nil {
			t.Fatalf("%s: %v", query, err)
		}
		if !row {
			return rows
		}
		var r strings.Builder
		for i := range st.ColumnCount() {
			switch st.ColumnType(i) {
			case rawsqlite.TypeNull:
				r.WriteString("|N")
			case rawsqlite.TypeBlob:
				fmt.Fprintf(&r, "|B%x", sha256.Sum256(st.ColumnBlob(i)))
			default:
				fmt.Fprintf(&r, "|%d:%s", st.ColumnType(i), st.ColumnText(i))
			}
		}
		rows = append(rows, r.String())
	}
}

// Rows runs query on db and returns every row, each value as the driver
// gives it: nil, int64, float64, string or []byte (time.Time for a column
// declared as a time). A failed query or read is returned, so that a test
// can show it as a difference.
func Rows(db *sql.DB, query string, args ...any) ([][]any, error) {
	rs, err := db.Query(query, args...)
	if err != nil {
		return nil, err
	}
	defer rs.Close()
	cols, err := rs.Columns()
	if err != nil {
		return nil, err
	}
	var rows [][]any
	for rs.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rs.Scan(ptrs...); err != nil {
			return nil, err
		}
		rows = append(rows, vals)
	}
	return rows, rs.Err()
}

// FileRows is Rows on the database file at path, read-only, on a
// connection of its own that is closed before it returns (so that no
// connection of the test lingers beside the program under test); it waits
// up to 5 s for another program's lock.
func FileRows(path, query string, args ...any) ([][]any, error) {
	db, err := sql.Open("sqlite", rawsqlite.FileURI(path, "mode=ro&_pragma=busy_timeout(5000)"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	return Rows(db, query, args...)
}

// Text is rows as a person reads them: one line a row, values joined by
// '|', each as database/sql scans it into a string (NULL as nothing).
// It cannot tell NULL from an empty string or 1 from '1': compare Rows
// where that matters.
func Text(rows [][]any) string {
	var b strings.Builder
	for _, row := range rows {
		for i, v := range row {
			if i > 0 {
				b.WriteByte('|')
			}
			b.WriteString(asString(v))
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// asString is v as database/sql's Scan into a string writes it.
func asString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case string:
		return v
	case []byte:
		return string(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case time.Time:
		return v.Format(time.RFC3339Nano)
	}
	return fmt.Sprint(v)
}
