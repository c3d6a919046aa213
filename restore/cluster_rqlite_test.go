package restore

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// clusterExec runs statements on the cluster as one request.
func clusterExec(t *testing.T, c *rqlite.Client, stmts ...memory.Stmt) {
	t.Helper()
	if _, err := c.Execute(context.Background(), toRqlite(stmts)); err != nil {
		t.Fatalf("%s: %v", stmts[0].SQL, err)
	}
}

// leaderRows reads query on the leader (strong) as text.
func leaderRows(t *testing.T, c *rqlite.Client, query string) string {
	t.Helper()
	res, err := c.Query(context.Background(), []rqlite.Statement{{SQL: query}}, rqlite.Strong)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	var b strings.Builder
	for _, row := range res.Results[0].Values {
		parts := make([]string, len(row))
		for i, v := range row {
			parts[i] = fmt.Sprint(v)
		}
		b.WriteString(strings.Join(parts, "|") + "\n")
	}
	return b.String()
}

// TestRunClusterRace: a write that lands between the backup the restore
// planned from and its request fails the request on every node, and the
// person is told to run it again; run again, it restores.
func TestRunClusterRace(t *testing.T) {
	cl := rqlitetest.Start(t, 3)
	c := cl.Client()
	ctx := context.Background()
	clusterExec(t, c, memory.ClusterSchema()...)
	clusterExec(t, c, memory.Stmt{SQL: "CREATE TABLE notes (id INTEGER PRIMARY KEY, body, at DATETIME)"},
		memory.Stmt{SQL: "INSERT INTO notes VALUES (1, x'00ff', '2026-12-05 10:00:00'), (2, 'x''41''', NULL), (3, 2.0, 'soon'), (4, 9223372036854775807, 1e20), (5, -9223372036854775808, 0.1), (6, 9e999, -9e999), (7, CAST(x'41ff' AS TEXT), x'')"},
		memory.Stmt{SQL: "CREATE TABLE docs (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT)"},
		memory.Stmt{SQL: "CREATE VIRTUAL TABLE docs_fts USING fts5(body, content='docs', content_rowid='id')"},
		memory.Stmt{SQL: "CREATE TRIGGER docs_ai AFTER INSERT ON docs BEGIN INSERT INTO docs_fts(rowid, body) VALUES (new.id, new.body); END"},
		memory.Stmt{SQL: "INSERT INTO docs (body) VALUES ('the cache key'), ('a rainy day'), ('gone')"},
		memory.Stmt{SQL: "DELETE FROM docs WHERE body = 'gone'"},
		memory.Stmt{SQL: "CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1)"},
		memory.Stmt{SQL: "INSERT INTO boxes VALUES (1, 0, 1), (2, 5, 9)"},
		memory.Stmt{SQL: "ANALYZE"})
	head := memory.Head{Hash: memory.GenesisHash}
	_, plan, err := memory.PlanAppend(head, time.Now(), "s", "note", "before the snapshot", nil)
	if err != nil {
		t.Fatal(err)
	}
	clusterExec(t, c, plan...)

	dir := filepath.Join(t.TempDir(), "n1.snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	snap := filepath.Join(dir, snapshot.FileName(ClusterStem, "", time.Now()))
	f, err := os.Create(snap)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Backup(ctx, f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	const notesQ = "SELECT id, typeof(body), hex(body), quote(body), typeof(at), hex(at), quote(at) FROM notes ORDER BY id"
	want := leaderRows(t, c, notesQ)
	// The full-text index finds the first doc (the third was deleted
	// from docs, not from the index: the snapshot's index is copied as
	// it is), the counter is past the deleted row, the R*Tree answers.
	const moreQ = "SELECT (SELECT group_concat(rowid) FROM docs_fts WHERE docs_fts MATCH 'cache'), (SELECT seq FROM sqlite_sequence WHERE name = 'docs'), (SELECT group_concat(id) FROM boxes WHERE x1 > 4), (SELECT count(*) > 0 FROM sqlite_stat1 WHERE tbl = 'docs')"
	more := leaderRows(t, c, moreQ)
	if more != "1|3|2|1\n" {
		t.Fatalf("the snapshot's docs, counter, boxes and statistics: %q", more)
	}
	clusterExec(t, c, memory.Stmt{SQL: "DROP TABLE notes"}, memory.Stmt{SQL: "CREATE TABLE later (x)"},
		memory.Stmt{SQL: "DELETE FROM docs"}, memory.Stmt{SQL: "INSERT INTO docs_fts(docs_fts) VALUES ('rebuild')"},
		memory.Stmt{SQL: "DROP TABLE boxes"}, memory.Stmt{SQL: "DELETE FROM sqlite_stat1"})

	// A front's audit row lands in between.
	testHookClusterPlanned = func() {
		clusterExec(t, c, audit.ClusterInsert(audit.Entry{TS: time.Now(), Session: "s", Tool: "read_query", OK: true}))
	}
	t.Cleanup(func() { testHookClusterPlanned = func() {} })
	var out bytes.Buffer
	_, err = RunCluster(ctx, ClusterOptions{Nodes: cl.URLs(), Snapshot: snap, Out: &out})
	if err == nil || !strings.Contains(err.Error(), "the cluster changed since its state was read") || !strings.Contains(err.Error(), "Run restore again") {
		t.Fatalf("a restore racing a write: %v\n%s", err, out.String())
	}
	if names, _ := filepath.Glob(filepath.Join(dir, "*.pre-restore.db")); len(names) != 0 {
		t.Errorf("the failed restore kept a safety snapshot of a state it did not change: %q", names)
	}
	if got := leaderRows(t, c, "SELECT (SELECT count(*) FROM sqlite_master WHERE name IN ('notes', 'later')), (SELECT count(*) FROM memory_events), (SELECT count(*) FROM query_log WHERE tool = 'restore')"); got != "1|1|0\n" {
		t.Fatalf("the failed restore changed the cluster: %q", got)
	}

	testHookClusterPlanned = func() {}
	out.Reset()
	res, err := RunCluster(ctx, ClusterOptions{Nodes: cl.URLs(), Snapshot: snap, Out: &out, Reason: "again"})
	if err != nil {
		t.Fatalf("the restore run again: %v\n%s", err, out.String())
	}
	if got := leaderRows(t, c, notesQ); got != want {
		t.Errorf("notes after the restore:\n%s\nin the snapshot:\n%s", got, want)
	}
	if got := leaderRows(t, c, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1|note\n2|restore\n" || res.Event.ID != 2 {
		t.Errorf("events: %q (event %d)", got, res.Event.ID)
	}
	if got := leaderRows(t, c, moreQ); got != more {
		t.Errorf("docs' index, counter, boxes and statistics after the restore: %q, in the snapshot %q", got, more)
	}
	if got := leaderRows(t, c, "SELECT count(*) FROM sqlite_master WHERE name = 'later'"); got != "0\n" {
		t.Errorf("later is still there: %q", got)
	}
}
