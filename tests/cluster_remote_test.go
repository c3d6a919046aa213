package tests

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// startRemote starts a front in cluster mode with no node beside it (no
// --rqlite-data) and initializes an MCP session over its stdio.
func startRemote(t testing.TB, cl *rqlitetest.Cluster, flags ...string) *session {
	t.Helper()
	args := append([]string{"--rqlite", strings.Join(cl.URLs(), ",")}, flags...)
	c, err := client.NewStdioMCPClient(serverBin, nil, args...)
	if err != nil {
		t.Fatalf("start front: %v", err)
	}
	s := &session{t: t, c: c}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		var said []byte
		if stderr, ok := client.GetStderr(c); ok {
			said, _ = io.ReadAll(io.LimitReader(stderr, 4000))
		}
		t.Fatalf("initialize a front without a local node: %v\n%s", err, said)
	}
	return s
}

// TestClusterWithoutLocalNode: a front without --rqlite-data judges on its
// schema mirror, forwards reads and renders them as a front beside a node
// does (the same texts), follows another front's schema change, reads the
// memory through a copy of the cluster's database, and stops a runaway
// read inside the cluster.
func TestClusterWithoutLocalNode(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	snaps := filepath.Join(testDir(t), "snaps")
	caps := []string{"--max-cell-chars", "12", "--max-rows", "50", "--default-limit", "20", "--query-timeout", "2"}
	r := startRemote(t, cl, append([]string{"--snapshot-dir", snaps}, caps...)...)
	local := startFront(t, cl, 1, caps...)

	r.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, score REAL, b BLOB)"))
	r.ok("write_query", q("INSERT INTO notes (body, score, b) VALUES ('first', 2.0, x'00ff'), ('', 0.1, NULL), (NULL, 1e16, NULL), ('a much longer body than twelve', -3, NULL)"))
	r.ok("write_query", q("WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 60) INSERT INTO notes (body) SELECT 'n' || x FROM n"))
	// The same texts as a front whose worker reads a node's file.
	for _, args := range []map[string]any{
		q("SELECT id, body, score, b FROM notes WHERE id <= 4 ORDER BY id"),
		{"query": "SELECT id, body, score FROM notes ORDER BY id", "limit": 3, "offset": 2},
		{"query": "SELECT id, body FROM notes ORDER BY id", "limit": 50},
		{"query": "SELECT id, body, score FROM notes WHERE id <= 4 ORDER BY id", "format": "json"},
		{"query": "SELECT count(*) AS n, sum(score) FROM notes"},
		{"query": "SELECT * FROM notes WHERE 0"},
	} {
		if got, want := r.ok("read_query", args), local.ok("read_query", args); got != want {
			t.Errorf("read_query %v without a local node:\n%s\nwith one:\n%s", args, got, want)
		}
	}
	for _, tool := range []struct {
		name string
		args map[string]any
	}{{"describe_table", map[string]any{"table": "notes"}}, {"get_schema", nil}} {
		if got, want := r.ok(tool.name, tool.args), local.ok(tool.name, tool.args); got != want {
			t.Errorf("%s without a local node:\n%s\nwith one:\n%s", tool.name, got, want)
		}
	}
	if got := r.ok("list_tables", nil); !strings.Contains(got, "notes") || strings.Contains(got, "memory_cluster_guard") {
		t.Errorf("list_tables: %s", got)
	}

	// Another front's schema change is seen at once.
	local.ok("write_query", q("CREATE TABLE later (k TEXT)"))
	local.ok("write_query", q("INSERT INTO later VALUES ('other')"))
	if got := r.ok("read_query", q("SELECT k FROM later")); !strings.Contains(got, "\nother\n") {
		t.Errorf("a table another front made: %s", got)
	}
	r.ok("write_query", q("INSERT INTO later VALUES ('here')"))
	// (The front beside node 1 reads its node's file, which is sure to
	// hold its own writes only: wait for every node.)
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT count(*) FROM later"); strings.TrimSpace(got) != "2" {
		t.Errorf("the nodes hold %s rows of later", got)
	}

	// Refusals happen in the worker, on the mirror.
	r.fails("write_query", q("INSERT INTO notes (body) VALUES (random())"), "POLICY_VIOLATION")
	r.fails("read_query", q("SELECT * FROM nowhere"), "SQL_ERROR")
	r.fails("read_query", q("DELETE FROM notes"), "READ_ONLY_VIOLATION")
	r.fails("write_query", q("UPDATE memory_events SET content = 'x'"), "PROTECTED_TABLE")
	r.fails("search_text", map[string]any{"pattern": "first", "table": "notes"}, "DATABASE_UNAVAILABLE")
	// A runaway read is stopped inside the cluster; the front reads on.
	r.fails("read_query", q("WITH RECURSIVE r(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM r) SELECT count(*) FROM r"), "TIMEOUT")
	r.ok("read_query", q("SELECT 1"))

	// The memory, read through a copy of the cluster's database.
	r.ok("append_event", map[string]any{"content": "the cache_key lives in notes", "kind": "decision"})
	local.ok("append_event", map[string]any{"content": "appended by the front beside node 1"})
	r.ok("checkpoint", map[string]any{"summary": "remote front works"})
	if got := r.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) || !strings.Contains(got, `"events": 2`) {
		t.Errorf("verify_chain: %s", got)
	}
	if got := r.ok("get_resume_context", nil); !strings.Contains(got, "remote front works") || !strings.Contains(got, "at event 2") {
		t.Errorf("get_resume_context: %s", got)
	}
	if got := r.ok("recall", map[string]any{"query": "cache_key"}); !strings.Contains(got, ",decision,,") || !strings.Contains(got, "# 1 of 1 matches") {
		t.Errorf("recall: %s", got)
	}
	// A destructive statement keeps the cluster's backup first.
	got := r.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id > 4", "reason": "keep four"})
	if !strings.Contains(got, "ok: 60 rows affected") || !strings.Contains(got, "snapshot: "+snaps) {
		t.Fatalf("destructive_query: %s", got)
	}
	entries, err := os.ReadDir(snaps)
	if err != nil || len(entries) != 1 {
		t.Fatalf("snapshot folder: %v %v", entries, err)
	}
	// The snapshot tool too: the cluster's rows, not the mirror's schema.
	got = r.ok("snapshot", map[string]any{"reason": "by hand"})
	path, ok := strings.CutPrefix(got, "ok: snapshot written: ")
	if !ok {
		t.Fatalf("snapshot: %s", got)
	}
	var kept int
	if err := openDirect(t, path).QueryRow("SELECT count(*) FROM notes").Scan(&kept); err != nil || kept != 4 {
		t.Fatalf("the snapshot %s holds %d notes (%v)", path, kept, err)
	}
	if got := sameOnEveryNode(t, cl, []int{0, 1, 2}, "SELECT count(*) FROM notes"); strings.TrimSpace(got) != "4" {
		t.Errorf("notes after the delete: %s", got)
	}

	// call --rqlite without a node: the same front in process.
	out, errOut, status := cliRun(t, nil, "call", "--rqlite", strings.Join(cl.URLs(), ","), "--snapshots", "0", "read_query", `{"query":"SELECT count(*) FROM notes"}`)
	if status != 0 || !strings.HasPrefix(out, "count(*)\n4\n") {
		t.Fatalf("call --rqlite: exit %d: %s %s", status, out, errOut)
	}
}
