package tests

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// TestClusterPlannedFileServed: a file written only by the cluster's
// statement plans (issue 45: ClusterSchema, then PlanAppend and
// PlanCheckpoint, each in one transaction, as rqlite runs them; what a
// node's /db/backup returns) is a memory database the server serves:
// its chain verifies, recall and get_resume_context find the planned rows
// through the indexes the plans wrote, the cluster's guard table is hidden
// and protected, and the start check takes the chain-guard index for the
// server's own.
func TestClusterPlannedFileServed(t *testing.T) {
	path := newDB(t)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	run := func(stmts []memory.Stmt) {
		t.Helper()
		tx, err := db.Begin()
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		for _, s := range stmts {
			if _, err := tx.Exec(s.SQL, s.Args...); err != nil {
				t.Fatalf("%.60s: %v", s.SQL, err)
			}
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.Exec(`PRAGMA journal_mode=WAL`); err != nil {
		t.Fatal(err)
	}
	run(memory.ClusterSchema())
	ts := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, content := range []string{"moved the cache_key lookup into ordersCache", "Café: décidé", "deploy notes\r\nsecond line"} {
		head, err := memory.ReadHead(context.Background(), db)
		if err != nil {
			t.Fatal(err)
		}
		_, plan, err := memory.PlanAppend(head, ts.Add(time.Duration(i)*time.Second), "20260301T090000Z-ab12@agent-a", "", content, nil)
		if err != nil {
			t.Fatal(err)
		}
		run(plan)
	}
	head, _ := memory.ReadHead(context.Background(), db)
	_, plan, err := memory.PlanCheckpoint(head, ts.Add(time.Minute), "20260301T090000Z-ab12", "planned checkpoint: caching done", nil)
	if err != nil {
		t.Fatal(err)
	}
	run(plan)
	db.Close()

	s := start(t, path)
	if text := s.ok("verify_chain", nil); !strings.Contains(text, `"ok": true, "events": 3`) {
		t.Fatalf("verify_chain: %s", text)
	}
	if text := s.ok("recall", map[string]any{"query": "orders cache"}); !strings.Contains(text, "cache_key lookup") {
		t.Fatalf("recall of a planned event's identifier parts: %s", text)
	}
	if text := s.ok("recall", map[string]any{"query": "caching", "kinds": []any{"checkpoint"}}); !strings.Contains(text, "planned checkpoint") {
		t.Fatalf("recall of the planned checkpoint: %s", text)
	}
	if text := s.ok("get_resume_context", map[string]any{"query": "cafe"}); !strings.Contains(text, "planned checkpoint: caching done") ||
		!strings.Contains(text, "chain ok (3 events)") || !strings.Contains(text, "Café: décidé") {
		t.Fatalf("get_resume_context: %s", text)
	}
	if text := s.ok("list_tables", nil); strings.Contains(text, memory.TableClusterGuard) {
		t.Fatalf("list_tables shows the guard table: %s", text)
	}
	s.ok("read_query", q(`SELECT k, ok FROM memory_cluster_guard`))
	s.fails("write_query", q(`INSERT OR REPLACE INTO memory_cluster_guard(k, ok) VALUES (1, 1)`), "PROTECTED_TABLE")
	s.fails("destructive_query", map[string]any{"query": `DROP TABLE memory_cluster_guard`, "reason": "test"}, "PROTECTED_TABLE")
	s.fails("destructive_query", map[string]any{"query": `DROP INDEX memory_events_prev_hash`, "reason": "test"}, "PROTECTED_TABLE")
	s.ok("append_event", map[string]any{"content": "appended by the single-file server"})
	if text := s.ok("verify_chain", nil); !strings.Contains(text, `"ok": true, "events": 4`) {
		t.Fatalf("verify_chain after a local append: %s", text)
	}
}
