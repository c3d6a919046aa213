package tests

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// startClusterHTTP starts a cluster front beside node i of cl serving MCP
// over HTTP, with a token for each agent.
func startClusterHTTP(t testing.TB, cl *rqlitetest.Cluster, i int, agents []string, flags ...string) *httpServer {
	t.Helper()
	h := &httpServer{
		t: t, tokens: filepath.Join(testDir(t), "tokens"), token: map[string]string{},
		memory: []string{"--rqlite", strings.Join(cl.URLs(), ","), "--rqlite-data", cl.DataDir(i)},
	}
	for _, a := range agents {
		h.token[a] = addToken(t, h.tokens, a)
	}
	h.start(flags...)
	return h
}

// TestClusterOverHTTP: a cluster front serves MCP over HTTP (SPEC 11 and
// 13) and the person's view at /ui/ shows the copy of the node beside it.
// The front used to exit at start: the view opened --db, empty in
// cluster mode.
func TestClusterOverHTTP(t *testing.T) {
	t.Parallel()
	cl := rqlitetest.Start(t, 3)
	h := startClusterHTTP(t, cl, 1, []string{"alice"})
	s := h.connect(t, "alice", true)
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes (body) VALUES ('over http')"))
	if got := s.ok("read_query", q("SELECT body FROM notes")); !strings.HasPrefix(got, "body\nover http\n") {
		t.Fatalf("read after write: %q", got)
	}
	s.ok("append_event", map[string]any{"content": "a cluster front over HTTP"})
	if v := s.verify(); !v.OK || v.Events != 1 {
		t.Fatalf("verify_chain: %+v", v)
	}
	status, _, body := h.rawRequest(t, "GET", "/ui/", map[string]string{"Authorization": "Bearer " + h.token["alice"]}, "")
	if status != 200 || !strings.Contains(body, "a cluster front over HTTP") {
		t.Fatalf("/ui/: %d %q", status, bounded(body))
	}
	if log := h.log.String(); strings.Contains(log, `--db ""`) {
		t.Fatalf("the front warned about the --db it was not given:\n%s", tail(log, 2000))
	}
}
