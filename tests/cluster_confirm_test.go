package tests

import (
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// TestClusterConfirm: in cluster mode the person is asked before a
// destructive statement as in single-file mode (SPEC 5.5), in both
// protocol versions; the question says the server cannot count what the
// statement would change (no dry run on the node's read-only copy). A
// declined statement changes nothing on any node; an allowed one runs.
func TestClusterConfirm(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	args := []string{"--rqlite", strings.Join(cl.URLs(), ","), "--rqlite-data", cl.DataDir(0)}
	setup := startFront(t, cl, 1)
	setup.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT)"))
	setup.ok("write_query", q("INSERT INTO items (name) VALUES ('a'), ('b'), ('c')"))
	all := []int{0, 1, 2}
	for _, version := range confirmVersions {
		no := answering(mcp.ElicitationResponseActionDecline, nil)
		s := startAskingArgs(t, "", version, no, args)
		text, isErr := s.call("destructive_query", map[string]any{"query": "DELETE FROM items WHERE name = 'a'", "reason": "drop a"})
		if !isErr || !strings.HasPrefix(text, "DECLINED: ") {
			t.Fatalf("%s: declined: got (error=%v) %q", version, isErr, text)
		}
		questions := no.asked()
		if len(questions) != 1 {
			t.Fatalf("%s: %d questions, want 1", version, len(questions))
		}
		for _, want := range []string{"cannot count beforehand in cluster mode", "A snapshot (a copy of this server's node) is taken first", "DELETE FROM items WHERE name = 'a'"} {
			if !strings.Contains(questions[0].Message, want) {
				t.Errorf("%s: the question %q lacks %q", version, questions[0].Message, want)
			}
		}
		if got := sameOnEveryNode(t, cl, all, "SELECT name FROM items ORDER BY id"); got != "a\nb\nc\n" {
			t.Fatalf("%s: a declined statement changed the items: %q", version, got)
		}
	}
	yes := answering(mcp.ElicitationResponseActionAccept, map[string]any{"allow": true})
	s := startAskingArgs(t, "", mcp.ProtocolVersion20251125, yes, args)
	text := s.ok("destructive_query", map[string]any{"query": "DELETE FROM items WHERE name = 'a'", "reason": "drop a"})
	if !strings.HasPrefix(text, "ok: 1 rows affected; snapshot: ") {
		t.Fatalf("allowed: %q", text)
	}
	if got := sameOnEveryNode(t, cl, all, "SELECT name FROM items ORDER BY id"); got != "b\nc\n" {
		t.Fatalf("the allowed statement did not run on every node: %q", got)
	}
}
