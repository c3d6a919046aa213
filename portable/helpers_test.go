package portable

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// referencePath is the reference server's file, which memory's
// TestSharedTestdata pins.
const referencePath = "../memory/testdata/reference-memory.db"

// reasonHash is Verify's reason for a hash that does not check.
const reasonHash = "stored hash does not match the recomputed hash (content or metadata was altered)"

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

func openStore(t testing.TB, path string) *memory.Store {
	t.Helper()
	s, err := memory.Open(context.Background(), path, nil)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// rawDB is a direct connection, as any other program would open the file.
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

// matchIDs runs a query of event ids.
func matchIDs(t *testing.T, db *sql.DB, query string, args ...any) []int64 {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return ids
}

// rankedSQL matches the full-text index of the events.
const rankedSQL = `SELECT e.id FROM memory_events_fts f JOIN memory_events e ON e.id = f.rowid
WHERE memory_events_fts MATCH ? ORDER BY bm25(memory_events_fts), e.id DESC`

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
