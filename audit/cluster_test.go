package audit

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// queryLogRows dumps query_log in id order.
func queryLogRows(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.Query(`SELECT id, ts, session, tool, query, ok, rows, error, duration_ms, detail, typeof(query), typeof(rows), typeof(error), typeof(detail) FROM query_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		vals := make([]any, 14)
		ptrs := make([]any, len(vals))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		out = append(out, fmt.Sprintf("%v", vals))
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestClusterInsertEqualsQueue: the rows ClusterInsert statements store
// in a cluster's schema are the rows the memory database's queue writes
// for the same entries (NULLs, detail JSON, bounds and ts included).
func TestClusterInsertEqualsQueue(t *testing.T) {
	ctx := context.Background()
	ts := time.Date(2026, 3, 1, 9, 30, 15, 999_000_000, time.FixedZone("CET", 3600))
	long := strings.Repeat("SELECT 'é' || ", 40) + "1"
	bounded := Entry{TS: ts, Session: "s@agent", Tool: "read_query", Query: sql.NullString{String: long, Valid: true}, OK: true,
		Rows: sql.NullInt64{Int64: 1, Valid: true}, Duration: 12 * time.Millisecond, Detail: map[string]any{"max_rows": 100}}
	bounded.Bound(64)
	entries := []Entry{
		{TS: ts, Session: "20260301T090000Z-ab12", Tool: "append_event", OK: true, Duration: 1500 * time.Microsecond},
		{TS: ts, Session: "20260301T090000Z-ab12", Tool: "write_query", Query: sql.NullString{String: "INSERT INTO t VALUES ('\r\n日本')", Valid: true},
			OK: false, Error: "SQL_ERROR: no such table: t. Create it first", Duration: time.Second,
			Detail: map[string]any{"reason": "<&> \u2028", "limits": map[string]any{"timeout_ms": 5000, "rows": []any{1, "two", nil, true}}}},
		{TS: ts, Session: "s", Tool: "read_query", Query: sql.NullString{Valid: false}, OK: true, Rows: sql.NullInt64{Int64: 0, Valid: true}, Detail: map[string]any{}},
		bounded,
	}

	s := openStore(t, filepath.Join(t.TempDir(), "local.db"))
	for _, e := range entries {
		if err := s.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	want := queryLogRows(t, s.db)

	db, err := sql.Open("sqlite", "file:"+filepath.Join(t.TempDir(), "node.sqlite"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, st := range memory.ClusterSchema() {
		if _, err := db.Exec(st.SQL, st.Args...); err != nil {
			t.Fatal(err)
		}
	}
	for _, e := range entries {
		st := ClusterInsert(e)
		if _, err := db.Exec(st.SQL, st.Args...); err != nil {
			t.Fatal(err)
		}
	}
	got := queryLogRows(t, db)
	if !slices.Equal(got, want) || len(got) != len(entries) {
		t.Fatalf("cluster rows:\n%s\nqueue rows:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if !strings.Contains(got[3], "query_sha256") || !strings.Contains(got[0], "2026-03-01T08:30:15Z") {
		t.Fatalf("the bounded row or the ts is not as written: %s / %s", got[3], got[0])
	}
}

// TestClusterInsertArgsAreJSON: ClusterInsert's arguments are nil, int64
// or string, which JSON carries to rqlite unchanged.
func TestClusterInsertArgsAreJSON(t *testing.T) {
	for _, e := range []Entry{
		{Tool: "t"},
		{Tool: "t", Query: sql.NullString{String: "q", Valid: true}, Rows: sql.NullInt64{Int64: 3, Valid: true}, Error: "e", Detail: map[string]any{"a": 1}, OK: true},
	} {
		for i, arg := range ClusterInsert(e).Args {
			switch arg.(type) {
			case nil, int64, string:
			default:
				t.Errorf("argument %d of %+v is a %T", i, e, arg)
			}
		}
	}
}
