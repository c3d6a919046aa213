package tests

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestCgoBuild runs a session against the default build (`go build` with
// cgo where a C compiler is present, as `go run ./cmd/server` makes it).
// The other tests use static builds (see TestMain); a cgo build confines
// its workers by re-executing them, so this covers that path end to end:
// writes, reads, a refusal, a runaway query stopped, the chain.
func TestCgoBuild(t *testing.T) {
	t.Parallel()
	bin := filepath.Join(t.TempDir(), "mcp-sqlite-memory-default")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if out, err := exec.Command("go", "build", "-o", bin, "../cmd/server").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cgo, _ := exec.Command("go", "env", "CGO_ENABLED").Output()
	t.Logf("default build, CGO_ENABLED=%s", strings.TrimSpace(string(cgo)))

	db := newDB(t)
	c, err := client.NewStdioMCPClient(bin, os.Environ(), "--db", db, "--query-timeout", "1")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatal(err)
	}
	s := &session{t: t, c: c, db: db}
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
	s.ok("write_query", q("INSERT INTO t (v) VALUES ('a'), ('b')"))
	if got := s.ok("read_query", q("SELECT count(*) AS n FROM t")); got != "n\n2\n# 1 rows" {
		t.Fatalf("read: %q", got)
	}
	s.fails("write_query", q("DROP TABLE t"), "READ_ONLY_VIOLATION")
	s.fails("read_query", q("WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"), "TIMEOUT")
	s.ok("append_event", map[string]any{"content": "served by the default build"})
	if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true, "events": 1`) {
		t.Fatalf("verify_chain: %s", got)
	}
	if all, failed := auditRows(t, db); all != 7 || failed != 2 {
		t.Fatalf("audit rows %d (%d failed), want 7 (2 failed)", all, failed)
	}
}
