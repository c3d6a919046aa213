package memory

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
)

// testLogger sends the store's log to the test log.
func testLogger(t testing.TB) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: "memory", Output: tWriter{t}, Level: hclog.Debug})
}

type tWriter struct{ t testing.TB }

func (w tWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(string(p))
	return len(p), nil
}

// copyReference copies the reference database into a temp dir.
func copyReference(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(referencePath)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "reference-memory.db")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// rawDB is a direct connection, as any other program would open the file:
// no server code between the test and the tables.
func rawDB(t testing.TB, path string) *sql.DB {
	t.Helper()
	sep := "?"
	if strings.Contains(path, "?") {
		sep = "&"
	}
	db, err := sql.Open("sqlite", "file:"+path+sep+"_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func mustExec(t testing.TB, db *sql.DB, query string, args ...any) {
	t.Helper()
	if _, err := db.Exec(query, args...); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
}

// masterRows lists sqlite_master completely, in rowid order.
func masterRows(t testing.TB, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT type, name, tbl_name, rootpage, sql FROM sqlite_master ORDER BY rowid`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var typ, name, tbl string
		var root int64
		var text sql.NullString
		if err := rows.Scan(&typ, &name, &tbl, &root, &text); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%s|%s|%s|%d|%v|%q", typ, name, tbl, root, text.Valid, text.String))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func openStore(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path, testLogger(t))
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// fixedClock pins the store's clock, ticking one second per call.
func fixedClock(s *Store, start time.Time) {
	n := 0
	s.now = func() time.Time {
		n++
		return start.Add(time.Duration(n-1) * time.Second)
	}
}

// holdWriteLock takes the write lock of path from another connection, as
// another process would, until the returned release is called.
func holdWriteLock(t *testing.T, path string) (release func()) {
	t.Helper()
	conn, err := rawDB(t, path).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	done := false
	release = func() {
		if !done {
			done = true
			_, _ = conn.ExecContext(context.Background(), "COMMIT")
			conn.Close()
		}
	}
	t.Cleanup(release)
	return release
}
