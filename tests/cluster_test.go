package tests

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// startFront starts a front in cluster mode beside node i of cl and
// initializes an MCP session over its stdio.
func startFront(t testing.TB, cl *rqlitetest.Cluster, i int, flags ...string) *session {
	t.Helper()
	return startFrontArgs(t, cl, i, append([]string{"--rqlite", strings.Join(cl.URLs(), ","), "--rqlite-data", cl.DataDir(i)}, flags...))
}

// startFrontArgs starts a front beside node i of cl with exactly args.
func startFrontArgs(t testing.TB, cl *rqlitetest.Cluster, i int, args []string) *session {
	t.Helper()
	node := filepath.Join(cl.DataDir(i), "db.sqlite")
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(serverBin, nil, args, trackServer(node, &cmd))
	if err != nil {
		t.Fatalf("start front: %v", err)
	}
	s := &session{t: t, c: c, cmd: cmd}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize a front beside node %d: %v", i, err)
	}
	return s
}

// nodeRows reads query on node i alone (level none: that node's own copy).
func nodeRows(t testing.TB, cl *rqlitetest.Cluster, i int, query string) string {
	t.Helper()
	rows, err := nodeRowsErr(cl, i, query)
	if err != nil {
		t.Fatalf("node %d: %s: %v", i, query, err)
	}
	return rows
}

// nodeRowsErr is nodeRows returning the error: a node just restarted may
// not serve reads yet.
func nodeRowsErr(cl *rqlitetest.Cluster, i int, query string) (string, error) {
	c, err := rqlite.New([]string{cl.URL(i)}, rqlite.Options{Timeout: 10 * time.Second})
	if err != nil {
		return "", err
	}
	res, err := c.Query(context.Background(), []rqlite.Statement{{SQL: query}}, rqlite.None)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for _, row := range res.Results[0].Values {
		fmt.Fprintln(&b, row...)
	}
	return b.String(), nil
}

// sameOnEveryNode waits until every running node holds the same answer to
// query as node 0 (a follower applies a write a heartbeat later) and
// returns it.
func sameOnEveryNode(t testing.TB, cl *rqlitetest.Cluster, nodes []int, query string) string {
	t.Helper()
	var first string
	ok := waitFor(20*time.Second, func() bool {
		var err error
		if first, err = nodeRowsErr(cl, nodes[0], query); err != nil {
			return false
		}
		for _, i := range nodes[1:] {
			if rows, err := nodeRowsErr(cl, i, query); err != nil || rows != first {
				return false
			}
		}
		return true
	})
	if !ok {
		for _, i := range nodes {
			t.Logf("node %d: %s", i, tail(nodeRows(t, cl, i, query), 400))
		}
		t.Fatalf("the nodes differ on %s", query)
	}
	return first
}

func TestClusterToolsOverStdio(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0)

	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, at TEXT)"))
	if got := s.ok("write_query", q("INSERT INTO notes (body, at) VALUES ('first', '2026-12-04'), ('second', NULL)")); got != "ok: 2 rows affected (last_insert_rowid=2)" {
		t.Fatalf("insert answered %q", got)
	}
	// Read-your-writes: the read runs in a worker on node 0's file.
	if got := s.ok("read_query", q("SELECT id, body FROM notes ORDER BY id")); !strings.HasPrefix(got, "id,body\n1,first\n2,second\n") {
		t.Fatalf("read after write: %q", got)
	}
	// A SELECT sent to write_query is answered as a read.
	if got := s.ok("write_query", q("SELECT count(*) AS n FROM notes")); !strings.HasPrefix(got, "n\n2\n") {
		t.Fatalf("a SELECT through write_query: %q", got)
	}
	if got := s.ok("write_query", q("INSERT INTO notes (body) VALUES ('r') RETURNING id")); !strings.HasPrefix(got, "ok: 1 rows affected (last_insert_rowid=3); RETURNING rows are not returned") {
		t.Fatalf("RETURNING in cluster mode: %q", got)
	}
	s.ok("append_event", map[string]any{"content": "chose rqlite for the team's memory", "kind": "decision"})
	s.ok("append_event", map[string]any{"content": "the cache_key lives in notes"})
	s.ok("checkpoint", map[string]any{"summary": "cluster mode works end to end"})
	s.ok("append_event", map[string]any{"content": "chose rqlite v8.43.4", "kind": "decision"})
	if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) || !strings.Contains(got, `"events": 3`) {
		t.Fatalf("verify_chain: %s", got)
	}
	if got := s.ok("get_resume_context", nil); !strings.Contains(got, "cluster mode works end to end") || !strings.Contains(got, "chose rqlite v8.43.4") || !strings.Contains(got, "at event 2") {
		t.Fatalf("get_resume_context: %s", got)
	}
	if got := s.ok("recall", map[string]any{"query": "cache_key"}); !strings.Contains(got, "cache_key lives in notes") {
		t.Fatalf("recall: %s", got)
	}
	s.ok("create_view", map[string]any{"name": "firsts", "select_sql": "SELECT body FROM notes WHERE id = 1", "description": "the first note"})
	if got := s.ok("read_query", q("SELECT * FROM firsts")); !strings.Contains(got, "first") {
		t.Fatalf("view: %q", got)
	}
	if got := s.ok("list_tables", nil); !strings.Contains(got, "notes") || strings.Contains(got, "memory_cluster_guard") {
		t.Fatalf("list_tables: %s", got)
	}

	// Refused before anything reaches the cluster.
	s.fails("write_query", q("INSERT INTO notes (body) VALUES (random())"), "POLICY_VIOLATION")
	s.fails("write_query", q("INSERT INTO notes (body, at) VALUES ('x', datetime('now'))"), "POLICY_VIOLATION")
	s.fails("write_query", q("INSERT INTO notes (body, at) VALUES ('x', CURRENT_TIMESTAMP)"), "POLICY_VIOLATION")
	s.fails("destructive_query", map[string]any{"query": "VACUUM", "reason": "tidy"}, "POLICY_VIOLATION")
	s.fails("write_query", q("INSERT INTO notes (body) VALUES ('a'); INSERT INTO notes (body) VALUES ('b')"), "MULTIPLE_STATEMENTS")
	s.fails("write_query", q("INSERT INTO memory_events (ts, session, kind, content, prev_hash, hash) VALUES ('t','s','k','c','p','h')"), "PROTECTED_TABLE")
	s.fails("write_query", q("INSERT INTO nowhere VALUES (1)"), "SQL_ERROR")

	// The update-rows guard rolls the whole request back on every node.
	s.ok("write_query", q("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 20) INSERT INTO notes (body) SELECT 'n' || x FROM n"))
	small := startFront(t, cl, 1, "--max-update-rows", "5")
	s2 := small.fails("write_query", q("UPDATE notes SET body = 'changed'"), "POLICY_VIOLATION")
	if !strings.Contains(s2, "--max-update-rows=5") {
		t.Fatalf("update guard: %s", s2)
	}

	// A destructive statement is snapshotted from the node's copy first.
	got := s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id > 2", "reason": "keep the first two"})
	if !strings.Contains(got, "ok: 21 rows affected") || !strings.Contains(got, "snapshot: ") {
		t.Fatalf("destructive_query: %s", got)
	}
	snap := strings.TrimSpace(strings.SplitN(strings.SplitN(got, "snapshot: ", 2)[1], " ", 2)[0])
	if _, err := os.Stat(snap); err != nil {
		t.Fatalf("the snapshot %s: %v", snap, err)
	}

	all := []int{0, 1, 2}
	if rows := sameOnEveryNode(t, cl, all, "SELECT id, body FROM notes ORDER BY id"); rows != "1 first\n2 second\n" {
		t.Fatalf("notes on every node: %q", rows)
	}
	sameOnEveryNode(t, cl, all, "SELECT id, hash, prev_hash FROM memory_events ORDER BY id")
	// Every call's audit row, written with its write or queued after it.
	audit := sameOnEveryNode(t, cl, all, "SELECT tool, ok, rows FROM query_log WHERE tool = 'write_query' AND ok = 1 ORDER BY id")
	if !strings.Contains(audit, "write_query 1 2\n") {
		t.Fatalf("the insert's audit row should count its 2 rows: %q", audit)
	}
	// Nothing the refused statements named was created on any node.
	for _, i := range all {
		entries, _ := os.ReadDir(cl.DataDir(i))
		for _, e := range entries {
			if !strings.HasPrefix(e.Name(), "db.sqlite") && e.Name() != "raft" && e.Name() != "raft.db" && e.Name() != "rsnapshots" && e.Name() != "extensions" {
				t.Errorf("node %d holds an unexpected %s", i, e.Name())
			}
		}
	}
}
