package audit

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

type auditRow struct {
	ts, session, tool string
	query             sql.NullString
	ok                int64
	rows              sql.NullInt64
	errText           sql.NullString
	durationMS        int64
	detail            sql.NullString
}

func readAudit(t *testing.T, db *sql.DB) []auditRow {
	t.Helper()
	rows, err := db.Query(`SELECT ts, session, tool, query, ok, rows, error, duration_ms, detail FROM query_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.ts, &r.session, &r.tool, &r.query, &r.ok, &r.rows, &r.errText, &r.durationMS, &r.detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

func auditEntries() ([]Entry, []auditRow) {
	start := time.Date(2026, 3, 1, 8, 30, 15, 999_000_000, time.FixedZone("CET", 3600))
	entries := []Entry{
		{TS: start, Session: "S", Tool: "read_query", Query: sql.NullString{String: "SELECT 1", Valid: true},
			OK: true, Rows: sql.NullInt64{Int64: 1, Valid: true}, Duration: 1500 * time.Microsecond,
			Detail: map[string]any{"limit": 100, "more_rows": false}},
		{TS: start, Session: "S", Tool: "read_query", Query: sql.NullString{String: "SELECT nope", Valid: true},
			Error: "SQL_ERROR: no such column: nope", Duration: 3 * time.Millisecond},
		{TS: start, Session: "S", Tool: "append_event", OK: true, Rows: sql.NullInt64{Int64: 1, Valid: true},
			Detail: map[string]any{"event_id": int64(1), "kind": "note"}},
		{TS: start, Session: "S", Tool: "create_view", Query: sql.NullString{String: "", Valid: true}, OK: true,
			Detail: map[string]any{}},
		{TS: start, Session: "S", Tool: "destructive_query", Error: "TIMEOUT: query stopped after 10s (worker killed)",
			Duration: 10250 * time.Millisecond,
			Detail:   map[string]any{"reason": "clean up «old» rows", "snapshot": nil, "limits": []string{"a", "b"}}},
	}
	rows := []auditRow{
		{"2026-03-01T07:30:15Z", "S", "read_query", sql.NullString{String: "SELECT 1", Valid: true}, 1,
			sql.NullInt64{Int64: 1, Valid: true}, sql.NullString{}, 1, sql.NullString{String: `{"limit": 100, "more_rows": false}`, Valid: true}},
		{"2026-03-01T07:30:15Z", "S", "read_query", sql.NullString{String: "SELECT nope", Valid: true}, 0,
			sql.NullInt64{}, sql.NullString{String: "SQL_ERROR: no such column: nope", Valid: true}, 3, sql.NullString{}},
		{"2026-03-01T07:30:15Z", "S", "append_event", sql.NullString{}, 1,
			sql.NullInt64{Int64: 1, Valid: true}, sql.NullString{}, 0, sql.NullString{String: `{"event_id": 1, "kind": "note"}`, Valid: true}},
		{"2026-03-01T07:30:15Z", "S", "create_view", sql.NullString{String: "", Valid: true}, 1,
			sql.NullInt64{}, sql.NullString{}, 0, sql.NullString{}},
		{"2026-03-01T07:30:15Z", "S", "destructive_query", sql.NullString{}, 0,
			sql.NullInt64{}, sql.NullString{String: "TIMEOUT: query stopped after 10s (worker killed)", Valid: true}, 10250,
			sql.NullString{String: `{"limits": ["a", "b"], "reason": "clean up «old» rows", "snapshot": null}`, Valid: true}},
	}
	return entries, rows
}

func TestAuditStore(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	s := openStore(t, path)
	entries, want := auditEntries()
	for _, e := range entries {
		if err := s.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	got := readAudit(t, rawDB(t, path))
	if !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", got, want)
	}
	var n int
	if err := s.db.QueryRow(`SELECT count(*) FROM query_errors`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("query_errors rows = %d, %v", n, err)
	}
	// A zero TS means now.
	fixedClock(s, time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC))
	if err := s.Audit(ctx, Entry{Session: "S", Tool: "t", OK: true}); err != nil {
		t.Fatal(err)
	}
	if err := s.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	if rows := readAudit(t, s.db); rows[len(rows)-1].ts != "2030-01-01T00:00:00Z" {
		t.Fatalf("ts = %q", rows[len(rows)-1].ts)
	}
}

func TestAuditDB(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "audit", "a.db")
	a, err := Open(ctx, path, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	entries, want := auditEntries()
	for _, e := range entries {
		if err := a.Audit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	if err := a.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	raw := rawDB(t, path)
	if got := readAudit(t, raw); !slices.Equal(got, want) {
		t.Fatalf("rows:\n got %+v\nwant %+v", got, want)
	}
	var names []string
	rows, _ := raw.Query(`SELECT name FROM sqlite_master ORDER BY rowid`)
	for rows.Next() {
		var n string
		rows.Scan(&n)
		names = append(names, n)
	}
	rows.Close()
	if !slices.Equal(names, []string{"query_log", "query_log_ts", "query_log_no_update", "query_log_no_delete", "query_errors"}) {
		t.Fatalf("objects = %v", names)
	}
	if _, err := raw.Exec(`DELETE FROM query_log`); err == nil || !strings.Contains(err.Error(), "query_log is append-only") {
		t.Fatalf("delete: %v", err)
	}
	// The memory store can also be opened on the same file later: the
	// audit file is a subset of the full schema.
	if s, err := memory.Open(ctx, path, nil); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
}

func TestOpenAuditClash(t *testing.T) {
	path := filepath.Join(t.TempDir(), "a.db")
	mustExec(t, rawDB(t, path), `CREATE TABLE query_log (id INTEGER PRIMARY KEY, line TEXT)`)
	if _, err := Open(context.Background(), path, nil); !errors.Is(err, memory.ErrSchemaMismatch) {
		t.Fatalf("err = %v, want ErrSchemaMismatch", err)
	}
}

type failingAuditor struct{}

func (failingAuditor) Audit(context.Context, Entry) error { return errors.New("sink down") }
func (failingAuditor) AwaitAudit()                        {}

func TestLogAndMultiAuditor(t *testing.T) {
	var buf bytes.Buffer
	log := hclog.New(&hclog.LoggerOptions{Output: &buf, Level: hclog.Info, JSONFormat: true})
	entries, _ := auditEntries()
	m := Multi(nil, NewLog(log), failingAuditor{})
	err := m.Audit(context.Background(), entries[1])
	if err == nil || !strings.Contains(err.Error(), "sink down") {
		t.Fatalf("err = %v", err)
	}
	out := buf.String()
	for _, want := range []string{`"@level":"warn"`, `"tool":"read_query"`, `"query":"SELECT nope"`, `"error":"SQL_ERROR: no such column: nope"`} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %s: %s", want, out)
		}
	}
}

func TestDetailJSON(t *testing.T) {
	s := "ptr"
	cases := []struct {
		name string
		in   map[string]any
		want string
	}{
		{"reference append_event", map[string]any{"event_id": 1, "kind": "note"}, `{"event_id": 1, "kind": "note"}`},
		{"floats", map[string]any{"a": 2.0, "b": 0.1, "c": 1e16, "d": 1e-5, "e": 123456.789, "f": math.Copysign(0, -1)},
			`{"a": 2.0, "b": 0.1, "c": 1e+16, "d": 1e-05, "e": 123456.789, "f": -0.0}`},
		{"nested", map[string]any{"x": []any{1, "two", nil, true, map[string]any{"k": []string{}}}},
			`{"x": [1, "two", null, true, {"k": []}]}`},
		{"strings", map[string]any{"previous_sql": "CREATE VIEW \"v\" AS\n-- description: é <b>\nSELECT 1"},
			`{"previous_sql": "CREATE VIEW \"v\" AS\n-- description: é <b>\nSELECT 1"}`},
		{"pointers and durations", map[string]any{"p": &s, "n": (*int)(nil), "d": 1500 * time.Millisecond},
			`{"d": 1500, "n": null, "p": "ptr"}`},
		{"fallback", map[string]any{"m": map[string]int{"z": 1}}, `{"m": {"z":1}}`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := DetailJSON(c.in); got != c.want {
				t.Errorf("got  %s\nwant %s", got, c.want)
			}
		})
	}
}
