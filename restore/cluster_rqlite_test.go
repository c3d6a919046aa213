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
		memory.Stmt{SQL: "INSERT INTO notes VALUES (1, x'00ff', '2026-12-05 10:00:00'), (2, 'x''41''', NULL), (3, 2.0, 'soon')"})
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
	const notesQ = "SELECT id, typeof(body), hex(body), typeof(at), hex(at) FROM notes ORDER BY id"
	want := leaderRows(t, c, notesQ)
	clusterExec(t, c, memory.Stmt{SQL: "DROP TABLE notes"}, memory.Stmt{SQL: "CREATE TABLE later (x)"})

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
	if got := leaderRows(t, c, "SELECT count(*) FROM sqlite_master WHERE name = 'later'"); got != "0\n" {
		t.Errorf("later is still there: %q", got)
	}
}
