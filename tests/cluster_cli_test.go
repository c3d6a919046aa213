package tests

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// cliRun runs the server binary's one-shot command with args and returns
// its stdout, stderr and exit status.
func cliRun(t testing.TB, stdin []byte, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBin, args...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if stdin != nil {
		cmd.Stdin = bytes.NewReader(stdin)
	}
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		status = ee.ExitCode()
	case err != nil:
		t.Fatalf("%v: %v", args, err)
	}
	return out.String(), errOut.String(), status
}

// TestClusterCLI: export, verify and import --rqlite against real 3-node
// clusters, and call --rqlite. The export of a cluster holds what a front
// appended; imported into a new cluster it is served by a front there,
// verifies intact and exports the same bytes; a tampered chain exits 1.
func TestClusterCLI(t *testing.T) {
	t.Parallel()
	src := rqlitetest.Start(t, 3)
	s := startFront(t, src, 0)
	s.ok("append_event", map[string]any{"content": "the cache_key lives in notes", "kind": "decision"})
	s.ok("checkpoint", map[string]any{"summary": "cluster cli under test"})
	s.ok("append_event", map[string]any{"content": "second event, after the checkpoint"})
	srcURLs := strings.Join(src.URLs(), ",")

	out, errOut, status := cliRun(t, nil, "export", "--rqlite", srcURLs)
	if status != 0 {
		t.Fatalf("export --rqlite exit %d: %s", status, errOut)
	}
	export := []byte(out)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	if len(lines) != 3 || !strings.Contains(lines[0], `"content":"the cache_key lives in notes"`) ||
		!strings.Contains(lines[1], `"type":"checkpoint"`) || !strings.Contains(lines[2], "second event") {
		t.Fatalf("export --rqlite:\n%s", out)
	}
	// Every event's hash is the one the cluster holds.
	for _, row := range strings.Split(strings.TrimSpace(nodeRows(t, src, 1, "SELECT id, hash FROM memory_events ORDER BY id")), "\n") {
		if hash := strings.Fields(row)[1]; !strings.Contains(out, `"hash":"`+hash+`"`) {
			t.Fatalf("event %s's hash %s is not in the export:\n%s", row, hash, out)
		}
	}
	// To a file too, and the export verifies as one.
	file := filepath.Join(testDir(t), "memory.jsonl")
	if _, errOut, status := cliRun(t, nil, "export", "--rqlite", src.URL(2), "--out", file); status != 0 {
		t.Fatalf("export --rqlite --out exit %d: %s", status, errOut)
	}
	if got, err := os.ReadFile(file); err != nil || !bytes.Equal(got, export) {
		t.Fatalf("export --out differs from stdout (%v):\n%s", err, got)
	}
	if out, errOut, status := cliRun(t, nil, "verify", "--rqlite", srcURLs); status != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"events": 2`) {
		t.Fatalf("verify --rqlite exit %d: %s %s", status, out, errOut)
	}
	// One call through a cluster-mode front in this process.
	out, errOut, status = cliRun(t, nil, "call", "--rqlite", srcURLs, "--rqlite-data", src.DataDir(1), "verify_chain", "{}")
	if status != 0 || !strings.Contains(out, `"ok": true`) {
		t.Fatalf("call --rqlite verify_chain exit %d: %s %s", status, out, errOut)
	}
	for i := range 3 {
		src.Kill(i) // done with it: a second cluster starts below
	}

	dst := rqlitetest.Start(t, 3)
	dstURLs := strings.Join(dst.URLs(), ",")
	out, errOut, status = cliRun(t, export, "import", "--rqlite", dstURLs, "-")
	if status != 0 || !strings.Contains(out, "imported 2 events and 1 checkpoints") {
		t.Fatalf("import --rqlite exit %d: %s %s", status, out, errOut)
	}
	// A second import is refused: the cluster is not empty any more.
	if _, errOut, status := cliRun(t, export, "import", "--rqlite", dstURLs, "-"); status != 2 || !strings.Contains(errOut, "is not empty") || !strings.Contains(errOut, "rows in memory_events") {
		t.Fatalf("a second import: exit %d: %s", status, errOut)
	}
	if out, errOut, status := cliRun(t, nil, "verify", "--rqlite", dst.URL(1)); status != 0 || !strings.Contains(out, `"ok": true`) || !strings.Contains(out, `"events": 2`) {
		t.Fatalf("verify --rqlite of the import exit %d: %s %s", status, out, errOut)
	}
	// Every node has it; a front serves it, recall included (the
	// imported recall index rows), and appends on its head.
	sameOnEveryNode(t, dst, []int{0, 1, 2}, "SELECT id, hash FROM memory_events ORDER BY id")
	d := startFront(t, dst, 2)
	if got := d.ok("get_resume_context", nil); !strings.Contains(got, "cluster cli under test") || !strings.Contains(got, "second event") {
		t.Fatalf("get_resume_context after import: %s", got)
	}
	if got := d.ok("recall", map[string]any{"query": "cache_key"}); !strings.Contains(got, "cache_key lives in notes") {
		t.Fatalf("recall after import: %s", got)
	}
	d.ok("append_event", map[string]any{"content": "appended after the import"})
	out, errOut, status = cliRun(t, nil, "export", "--rqlite", dstURLs)
	if status != 0 || !strings.HasPrefix(out, string(export)) || !strings.Contains(out[len(export):], "appended after the import") {
		t.Fatalf("export after import exit %d (%s):\n%s", status, errOut, out)
	}
	if out, _, status := cliRun(t, nil, "verify", "--rqlite", dstURLs); status != 0 || !strings.Contains(out, `"events": 3`) {
		t.Fatalf("verify --rqlite after an append: exit %d: %s", status, out)
	}

	// Tampered through rqlite directly: the trigger dropped, a content
	// changed. verify --rqlite finds it and exits 1.
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := dst.Client().Execute(ctx, []rqlite.Statement{
		{SQL: "DROP TRIGGER memory_events_no_update"},
		{SQL: "UPDATE memory_events SET content = 'rewritten' WHERE id = 1"},
	}); err != nil {
		t.Fatal(err)
	}
	out, errOut, status = cliRun(t, nil, "verify", "--rqlite", dstURLs)
	if status != 1 || !strings.Contains(out, `"ok": false`) || !strings.Contains(out, `"break_at_id": 1`) {
		t.Fatalf("verify --rqlite of a tampered chain: exit %d: %s %s", status, out, errOut)
	}
}

// TestClusterCLIRefuses: what the --rqlite commands refuse, with exit 2.
func TestClusterCLIRefuses(t *testing.T) {
	t.Parallel()
	dead := "http://127.0.0.1:1" // nothing listens there
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"both", []string{"verify", "--rqlite", dead, "--db", "x.db"}, "--db and --rqlite both given"},
		{"no cluster", []string{"verify", "--rqlite", dead}, "no copy of the cluster's database could be read"},
		{"export, no cluster", []string{"export", "--rqlite", dead}, "no copy of the cluster's database could be read"},
		{"import, no cluster", []string{"import", "--rqlite", dead, "-"}, "could not be read"},
		{"import, no file", []string{"import", "--rqlite", dead}, "import --rqlite http://127.0.0.1:4001 memory.jsonl"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each waits out the client's failover (15 s)
			_, errOut, status := cliRun(t, []byte{}, tt.args...)
			if status != 2 || !strings.Contains(errOut, tt.want) {
				t.Fatalf("exit %d, stderr %s; want 2 and %q", status, errOut, tt.want)
			}
		})
	}
}
