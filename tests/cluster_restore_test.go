package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// TestClusterRestore: restore --rqlite puts the agent's tables back on
// every node from a front's snapshot, keeps every memory event and adds
// its own, and its safety snapshot undoes it.
func TestClusterRestore(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	s := startFront(t, cl, 0)
	all := []int{0, 1, 2}
	urls := strings.Join(cl.URLs(), ",")

	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL, data BLOB, score REAL, at DATETIME)"))
	s.ok("write_query", q("INSERT INTO notes (body, data, score, at) VALUES ('first', x'00ff', 2.0, '2026-12-05 10:00:00'), ('x''41''', NULL, 0.1, NULL), ('third', x'', -1.5, 'soon')"))
	s.ok("write_query", q("CREATE INDEX notes_body ON notes(body)"))
	s.ok("write_query", q("CREATE TABLE tags (tag TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID"))
	s.ok("write_query", q("INSERT INTO tags VALUES ('a', 1), ('b', 2)"))
	s.ok("create_view", map[string]any{"name": "firsts", "select_sql": "SELECT tag FROM tags WHERE n = 1", "description": "the first tag"})
	s.ok("append_event", map[string]any{"content": "notes hold the cache keys"})

	const notesQ = "SELECT id, typeof(body), body, typeof(data), hex(data), typeof(score), quote(score), typeof(at), hex(at) FROM notes ORDER BY id"
	notes := sameOnEveryNode(t, cl, all, notesQ)
	if !strings.Contains(notes, "1 text first blob 00FF real 2.0 text 323032362D31322D30352031303A30303A3030") || !strings.Contains(notes, "2 text x'41' null") {
		t.Fatalf("notes before: %q", notes)
	}
	const schemaQ = "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'memory%' AND name NOT LIKE 'query%' AND name NOT LIKE 'sqlite%' ORDER BY name"
	schema := sameOnEveryNode(t, cl, all, schemaQ)

	got := s.ok("destructive_query", map[string]any{"query": "DROP TABLE notes", "reason": "clean up"})
	m := regexp.MustCompile(`snapshot: (\S+)`).FindStringSubmatch(got)
	if m == nil {
		t.Fatalf("destructive_query: %s", got)
	}
	snap := m[1]
	s.ok("destructive_query", map[string]any{"query": "DELETE FROM tags", "reason": "clean up"})
	s.ok("write_query", q("CREATE TABLE later (x)"))
	s.ok("write_query", q("INSERT INTO later VALUES (1)"))
	s.ok("append_event", map[string]any{"content": "dropped notes by mistake", "kind": "mistake"})
	sameOnEveryNode(t, cl, all, "SELECT id, hash FROM memory_events ORDER BY id")

	// A dry run prints the plan and changes nothing.
	out, err := exec.Command(serverBin, "restore", "--rqlite", urls, "--dry-run", snap).CombinedOutput()
	if err != nil {
		t.Fatalf("restore --dry-run: %v\n%s", err, out)
	}
	for _, want := range []string{"notes: not there now -> 3, added", "tags: 0 -> 2, replaced", "later: 1 -> not in the snapshot, removed", "statements (", "dry run: nothing was changed"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the dry run lacks %q:\n%s", want, out)
		}
	}
	if rows := nodeRows(t, cl, 0, "SELECT count(*) FROM sqlite_master WHERE name = 'notes'"); rows != "0\n" {
		t.Fatalf("the dry run changed the cluster: %q", rows)
	}
	if names, _ := filepath.Glob(filepath.Join(filepath.Dir(snap), "*")); len(names) != 2 {
		t.Errorf("the dry run left files in the snapshot folder: %q", names)
	}

	out, err = exec.Command(serverBin, "restore", "--rqlite", urls, "--reason", "undo the cleanup", snap).CombinedOutput()
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out)
	}
	t.Logf("restore:\n%s", out)
	sm := regexp.MustCompile(`safety snapshot of the cluster's current state: (\S+)`).FindSubmatch(out)
	if sm == nil || !strings.Contains(string(out), "restored on every node; memory event 3 (kind restore)") {
		t.Fatalf("restore said:\n%s", out)
	}
	safety := string(sm[1])
	if filepath.Dir(safety) != filepath.Dir(snap) || !strings.HasSuffix(safety, "Z.pre-restore.db") {
		t.Errorf("the safety snapshot %s should be beside %s", safety, snap)
	}
	if _, err := os.Stat(safety); err != nil {
		t.Fatal(err)
	}

	// Every node holds the snapshot's agent objects and rows, values with
	// their storage classes (the request is one transaction: once a node
	// has the restore's event it has the rest).
	if got := sameOnEveryNode(t, cl, all, "SELECT max(id) FROM memory_events"); got != "3\n" {
		t.Fatalf("newest event: %q", got)
	}
	if got := sameOnEveryNode(t, cl, all, notesQ); got != notes {
		t.Errorf("notes after the restore:\n%s\nwant:\n%s", got, notes)
	}
	if got := sameOnEveryNode(t, cl, all, schemaQ); got != schema {
		t.Errorf("schema after the restore:\n%s\nwant:\n%s", got, schema)
	}
	if got := sameOnEveryNode(t, cl, all, "SELECT tag, n FROM tags ORDER BY tag"); got != "a 1\nb 2\n" {
		t.Errorf("tags after the restore: %q", got)
	}
	// The memory kept every event and recorded the restore, with its
	// audit row.
	if got := sameOnEveryNode(t, cl, all, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1 note\n2 mistake\n3 restore\n" {
		t.Errorf("events after the restore: %q", got)
	}
	if got := sameOnEveryNode(t, cl, all, "SELECT tool, ok, json_extract(detail, '$.event_id') FROM query_log WHERE tool = 'restore'"); got != "restore 1 3\n" {
		t.Errorf("the restore's audit row: %q", got)
	}
	if got := nodeRows(t, cl, 0, "SELECT content FROM memory_events WHERE id = 3"); !strings.Contains(got, "undo the cleanup") || !strings.Contains(got, safety) {
		t.Errorf("the restore event: %s", got)
	}

	// The safety snapshot undoes it.
	out, err = exec.Command(serverBin, "restore", "--rqlite", urls, safety).CombinedOutput()
	if err != nil {
		t.Fatalf("restore of the safety snapshot: %v\n%s", err, out)
	}
	if got := sameOnEveryNode(t, cl, all, "SELECT max(id) FROM memory_events"); got != "4\n" {
		t.Fatalf("newest event: %q", got)
	}
	if got := sameOnEveryNode(t, cl, all, "SELECT (SELECT count(*) FROM sqlite_master WHERE name = 'notes'), (SELECT count(*) FROM tags), (SELECT x FROM later)"); got != "0 0 1\n" {
		t.Errorf("after restoring the safety snapshot: %q", got)
	}
	sameOnEveryNode(t, cl, all, "SELECT id, hash FROM memory_events ORDER BY id")
	if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) || !strings.Contains(got, `"events": 4`) {
		t.Fatalf("verify_chain: %s", got)
	}

	// Without a snapshot it lists the folder's.
	out, err = exec.Command(serverBin, "restore", "--rqlite", urls, "--rqlite-data", cl.DataDir(0)).CombinedOutput()
	if err == nil || !strings.Contains(string(out), filepath.Base(safety)) || !strings.Contains(string(out), "Try: mcp-sqlite-memory restore --rqlite ") {
		t.Errorf("restore without a snapshot: %v\n%s", err, out)
	}
}
