package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

func TestDemo(t *testing.T) {
	t.Parallel()
	keep := filepath.Join(testDir(t), "demo")
	out, err := exec.Command(serverBin, "demo", "--keep", keep).CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	text := string(out)
	for _, want := range []string{
		"== initialize: mcp-sqlite-memory",
		"-> list_tables",
		"customers,table,0,200",
		"READ_ONLY_VIOLATION: DROP TABLE is not allowed in write_query",
		"MULTIPLE_STATEMENTS: ",
		"PROTECTED_TABLE: memory_events",
		"; snapshot: ",
		"ok: event 1 appended (hash ",
		"ok: checkpoint 1 written at event 1",
		"# checkpoint 1 | ",
		"TIMEOUT: query stopped after 2s",
		`{"ok": true, "events": 1`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("demo output lacks %q", want)
		}
	}
	if t.Failed() {
		t.Log(text)
	}
	// --keep left a database that verifies offline.
	if out, err := exec.Command(serverBin, "verify", "--db", filepath.Join(keep, "shop.db")).CombinedOutput(); err != nil {
		t.Fatalf("verify kept demo db: %v %s", err, out)
	}
}

func TestCallCommand(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	run := func(args ...string) (string, int) {
		cmd := exec.Command(serverBin, append([]string{"call", "--db", db}, args...)...)
		out, err := cmd.Output()
		return string(out), exitCode(err)
	}
	if out, code := run("write_query", `{"query":"CREATE TABLE t (a)"}`); code != 0 || out != "ok: schema statement executed\n" {
		t.Fatalf("write: %d %q", code, out)
	}
	if out, code := run("read_query", `{"query":"SELECT count(*) AS n FROM t"}`); code != 0 || out != "n\n0\n# 1 rows\n" {
		t.Fatalf("read: %d %q", code, out)
	}
	if out, code := run("read_query", `{"query":"DELETE FROM t"}`); code != 1 || !strings.HasPrefix(out, "READ_ONLY_VIOLATION: ") {
		t.Fatalf("refusal: %d %q", code, out)
	}
	if _, code := run("read_query", `not json`); code != 2 {
		t.Fatalf("bad json: exit %d", code)
	}
	all, _ := auditRows(t, db)
	if all != 3 {
		t.Fatalf("audit rows %d, want 3", all)
	}
	// A one-shot command logs warnings only; -v shows the rest.
	for _, verbose := range []bool{false, true} {
		args := []string{"call", "--db", db, "read_query", `{"query":"SELECT 1"}`}
		if verbose {
			args = append(args[:3:3], append([]string{"-v"}, args[3:]...)...)
		}
		var stderr strings.Builder
		cmd := exec.Command(serverBin, args...)
		cmd.Stderr = &stderr
		if out, err := cmd.Output(); err != nil || out == nil {
			t.Fatalf("%v: %v %q", args, err, out)
		}
		if logged := strings.Contains(stderr.String(), "serving"); logged != verbose || (!verbose && stderr.Len() > 0) {
			t.Errorf("%v: stderr %q", args, stderr.String())
		}
	}
}

// TestVersion: --version and the version subcommand print the build's
// version, and MCP hosts see the same in serverInfo.
func TestVersion(t *testing.T) {
	t.Parallel()
	var printed []string
	for _, args := range [][]string{{"--version"}, {"version"}, {"--db", "x.db", "--version"}} {
		out, err := exec.Command(serverBin, args...).Output()
		if err != nil {
			t.Fatalf("%v: %v", args, err)
		}
		printed = append(printed, string(out))
	}
	if printed[0] != printed[1] || printed[0] != printed[2] || !strings.HasPrefix(printed[0], "mcp-sqlite-memory ") || strings.Count(printed[0], "\n") != 1 {
		t.Fatalf("version outputs %q", printed)
	}
	// "mcp-sqlite-memory VERSION" and, for a release, " (commit C)".
	version := strings.Fields(printed[0])[1]
	c, err := client.NewStdioMCPClient(serverBin, os.Environ(), "--db", newDB(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	res, err := c.Initialize(t.Context(), init)
	if err != nil {
		t.Fatal(err)
	}
	if res.ServerInfo.Version != version || version == "" || version == "0.1.0" {
		t.Fatalf("serverInfo.version %q, --version %q", res.ServerInfo.Version, version)
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--db", "x.db", "--max-rows", "many"}, 2, "Try: --max-rows 1000"},
		{[]string{"--db", "x.db", "--no-such-flag"}, 2, "unknown flag --no-such-flag\nTry: mcp-sqlite-memory --help"},
		{[]string{}, 2, "no database given"},
		{[]string{"--help"}, 0, "Usage:"},
		{[]string{"sample-db"}, 2, "sample-db takes one path"},
		{[]string{"verify"}, 2, "no database given"},
		{[]string{"restore", "--db", "x.db"}, 2, "restore takes the snapshot file"},
		{[]string{"restore", "x.db", "snap.db"}, 2, "Try: mcp-sqlite-memory restore --db x.db snap.db"},
		{[]string{"restore", "snap.db"}, 2, "Try: mcp-sqlite-memory restore --db PATH SNAPSHOT"},
		{[]string{"restore", "--db", "x.db", "--reason"}, 2, "--reason needs a text"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			cmd := exec.Command(serverBin, tt.args...)
			cmd.Dir = testDir(t)
			cmd.Env = append(os.Environ(), "MCP_SQLITE_DB=", "DATABASE_PATH=")
			out, err := cmd.CombinedOutput()
			if exitCode(err) != tt.code || !strings.Contains(string(out), tt.want) {
				t.Fatalf("exit %d, want %d; output %q lacks %q", exitCode(err), tt.code, out, tt.want)
			}
		})
	}
}

func TestRestore(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE t (a)"))
	s.ok("write_query", q("INSERT INTO t VALUES (1), (2)"))
	text := s.ok("destructive_query", map[string]any{"query": "DELETE FROM t", "reason": "oops"})
	snap := text[strings.Index(text, "snapshot: ")+len("snapshot: "):]

	out, err := exec.Command(serverBin, "restore", "--db", db, snap).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "a server is using") {
		t.Fatalf("restore under a running server: exit %d: %s", exitCode(err), out)
	}
	s.c.Close()
	// The server exits once its stdin closes; wait for its lock to go.
	var lastOut []byte
	for range 100 {
		lastOut, err = exec.Command(serverBin, "restore", "--db", db, snap).CombinedOutput()
		if err == nil {
			break
		}
		if !strings.Contains(string(lastOut), "a server is using") {
			t.Fatalf("restore: %v %s", err, lastOut)
		}
		sleepBriefly()
	}
	if err != nil {
		t.Fatalf("restore after the server stopped: %s", lastOut)
	}
	s2 := start(t, db)
	if got := s2.ok("read_query", q("SELECT count(*) AS n FROM t")); got != "n\n2\n# 1 rows" {
		t.Fatalf("after restore: %q", got)
	}
	if out, err := exec.Command(serverBin, "restore", "--db", db, filepath.Join(dir, "nope.db")).CombinedOutput(); err == nil {
		t.Fatalf("restore from a missing file: %s", out)
	}
}

func TestSubcommandHelp(t *testing.T) {
	t.Parallel()
	for _, sub := range []string{"demo", "sample-db", "call", "verify", "restore", "worker", "eval", "version"} {
		t.Run(sub, func(t *testing.T) {
			out, err := exec.Command(serverBin, sub, "--help").CombinedOutput()
			if err != nil || !strings.HasPrefix(string(out), "Usage: mcp-sqlite-memory "+sub) || !strings.Contains(string(out), "mcp-sqlite-memory "+sub+" ") {
				t.Fatalf("%v: %s", err, out)
			}
		})
	}
}
