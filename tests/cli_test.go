package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
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

// TestNewcomerMessages: what a person trying the binary by hand meets
// (issue 31), each message over the real binary: what it says, what it
// must not say, and what it leaves on disk. The rows run in order: some
// use what an earlier one made.
func TestNewcomerMessages(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	memoryDB := filepath.Join(dir, "memory.db")
	shop := filepath.Join(dir, "shop.db")
	export := filepath.Join(dir, "export.jsonl")
	if err := os.WriteFile(export, []byte(`{"v":1,"type":"header"}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "typo", "memroy.db")
	tests := []struct {
		name    string
		args    []string
		env     []string
		code    int
		want    []string // each in stdout+stderr
		notWant []string
		absent  string // a path that must not exist afterwards
		present string // a path that must exist afterwards
	}{
		{name: "no arguments", args: nil, code: 2,
			want: []string{"no database given"}, notWant: []string{"is relative"}},
		{name: "help --help", args: []string{"help", "--help"}, code: 0, want: []string{"Usage:"}},
		{name: "sample-db", args: []string{"sample-db", shop}, code: 0, present: shop},
		{name: "sample-db on an existing file", args: []string{"sample-db", shop}, code: 1,
			want: []string{"not empty", "Try: mcp-sqlite-memory sample-db ./shop2.db", "--profile readonly --db " + shop}},
		{name: "call creates a database and says so", args: []string{"call", "--db", memoryDB, "get_resume_context", "{}"}, code: 0,
			want: []string{"created a new memory database at " + memoryDB, "--must-exist"}, notWant: []string{"and its folder"}},
		{name: "call on it again says nothing of it", args: []string{"call", "--db", memoryDB, "get_resume_context", "{}"}, code: 0,
			notWant: []string{"created", "mcp-sqlite-memory:"}},
		{name: "call --must-exist on a mistyped path", args: []string{"call", "--must-exist", "--db", missing, "get_resume_context", "{}"}, code: 2,
			want: []string{"no database at " + missing + " (--must-exist)", "ls " + filepath.Dir(missing)}, absent: filepath.Dir(missing)},
		{name: "call --must-exist on a database", args: []string{"call", "--must-exist", "--db", memoryDB, "get_resume_context", "{}"}, code: 0,
			want: []string{"chain ok"}},
		{name: "call makes a folder and says so", args: []string{"call", "--db", filepath.Join("new", "sub", "m.db"), "verify_chain", "{}"}, code: 0,
			want: []string{"created a new memory database at " + filepath.Join(dir, "new", "sub", "m.db"), "(and its folder " + filepath.Join(dir, "new", "sub") + ")", fmt.Sprintf("--db %q is relative", filepath.Join("new", "sub", "m.db"))}},
		{name: "call with a literal tilde", args: []string{"call", "--db", "~/x.db", "verify_chain", "{}"}, code: 0,
			want: []string{`--db "~/x.db" starts with a literal "~"`, "created a new memory database at " + filepath.Join(dir, "~", "x.db")}},
		{name: "call on another program's SQLite file", args: []string{"call", "--db", shop, "list_tables", "{}"}, code: 0,
			want: []string{shop + " was an existing SQLite database without the server's tables", "memory_events", "switched it to WAL", "--profile readonly"}},
		{name: "and the next call on it says nothing", args: []string{"call", "--db", shop, "list_tables", "{}"}, code: 0,
			notWant: []string{"without the server's tables"}},
		{name: "call with flags after the tool name", args: []string{"call", "read_query", `{"query":"SELECT 1"}`, "--db", memoryDB}, code: 2,
			want:    []string{"flags go before the tool name", `Try: mcp-sqlite-memory call --db ` + memoryDB + ` read_query '{"query":"SELECT 1"}'`},
			notWant: []string{"call takes a tool name"}},
		{name: "call search", args: []string{"call", "--db", memoryDB, "search", `{"pattern":"x"}`}, code: 2,
			want: []string{`no tool named "search"`, "Did you mean search_text?"}},
		{name: "call with a JSON string", args: []string{"call", "--db", memoryDB, "read_query", `"SELECT 1"`}, code: 2,
			want: []string{"the arguments must be a JSON object of named arguments, got a string"}, notWant: []string{"cannot unmarshal", "interface {}"}},
		{name: "call with bad JSON", args: []string{"call", "--db", memoryDB, "read_query", `{query: 1}`}, code: 2,
			want: []string{"the arguments must be a JSON object", "is not valid JSON"}},
		{name: "verify --db an export", args: []string{"verify", "--db", export}, code: 2,
			want: []string{"not a SQLite database", "Try: mcp-sqlite-memory verify --jsonl " + export}},
		{name: "verify --jsonl a database", args: []string{"verify", "--jsonl", memoryDB}, code: 2,
			want: []string{"is a SQLite database, not an export", "Try: mcp-sqlite-memory verify --db " + memoryDB}},
		{name: "--worker that does not exist", args: []string{"call", "--db", filepath.Join(dir, "w.db"), "--worker", filepath.Join(dir, "nope"), "verify_chain", "{}"}, code: 2,
			want:   []string{"--worker " + filepath.Join(dir, "nope") + " (from --worker or MCP_SQLITE_WORKER) cannot run statements: no such file", "Try: --worker "},
			absent: filepath.Join(dir, "w.db")},
		{name: "MCP_SQLITE_WORKER that is not a worker", args: []string{"--db", memoryDB}, env: []string{"MCP_SQLITE_WORKER=" + catPath(t)}, code: 2,
			want: []string{"cannot run statements: it is not mcp-sqlite-memory-worker", "MCP_SQLITE_WORKER"}, notWant: []string{"serving"}},
		{name: "--worker that is not executable", args: []string{"call", "--db", memoryDB, "--worker", export, "verify_chain", "{}"}, code: 2,
			want: []string{"cannot run statements: it is not executable"}},
	}
	for _, tt := range tests {
		if runtime.GOOS == "windows" && strings.Contains(tt.name, "not executable") {
			continue // Windows has no execute bit: the file fails the handshake instead
		}
		cmd := exec.Command(serverBin, tt.args...)
		cmd.Dir = dir
		cmd.Env = append(append(os.Environ(), "MCP_SQLITE_DB=", "DATABASE_PATH=", "MCP_SQLITE_WORKER="), tt.env...)
		out, err := cmd.CombinedOutput()
		text := string(out)
		if code := exitCode(err); code != tt.code {
			t.Errorf("%s: exit %d, want %d:\n%s", tt.name, code, tt.code, bounded(text))
		}
		for _, w := range tt.want {
			if !strings.Contains(text, w) {
				t.Errorf("%s: output lacks %q:\n%s", tt.name, w, bounded(text))
			}
		}
		for _, w := range tt.notWant {
			if strings.Contains(text, w) {
				t.Errorf("%s: output has %q:\n%s", tt.name, w, bounded(text))
			}
		}
		if _, err := os.Stat(tt.absent); tt.absent != "" && err == nil {
			t.Errorf("%s: %s was created", tt.name, tt.absent)
		}
		if _, err := os.Stat(tt.present); tt.present != "" && err != nil {
			t.Errorf("%s: %v", tt.name, err)
		}
	}
}

// catPath is a program that is not a worker: it echoes the handshake.
func catPath(t *testing.T) string {
	if runtime.GOOS == "windows" {
		return serverBin // the server itself answers no worker handshake
	}
	p, err := exec.LookPath("cat")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestStartedByHandSaysSo: a server whose stdin is a terminal (util-linux's
// script gives it one) says once that it expects an MCP host, and how to
// try it instead; piped (a host), it says nothing of the kind.
func TestStartedByHandSaysSo(t *testing.T) {
	t.Parallel()
	script, err := exec.LookPath("script")
	if err != nil || runtime.GOOS != "linux" {
		t.Skip("needs util-linux's script (Linux) for a terminal")
	}
	db := filepath.Join(testDir(t), "m.db")
	cmd := exec.Command(script, "-qec", serverBin+" --db "+db, os.DevNull)
	cmd.Stdin = strings.NewReader("\x04")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("by hand: %v\n%s", err, bounded(string(out)))
	}
	for _, w := range []string{"it expects an MCP host", "mcp-sqlite-memory demo", "mcp-sqlite-memory call --db PATH"} {
		if strings.Count(string(out), w) != 1 {
			t.Errorf("by hand: %q not said once:\n%s", w, bounded(string(out)))
		}
	}
	piped, err := exec.Command(serverBin, "--db", db).CombinedOutput()
	if err != nil || strings.Contains(string(piped), "expects an MCP host") {
		t.Errorf("piped: %v\n%s", err, bounded(string(piped)))
	}
}

// TestListArgumentsBothForms: every argument that takes a list of names
// takes an array or one comma-separated string, the same way.
func TestListArgumentsBothForms(t *testing.T) {
	t.Parallel()
	s := start(t, newDB(t))
	s.ok("write_query", q("CREATE TABLE notes (title TEXT, body TEXT, tag TEXT)"))
	s.ok("write_query", q("INSERT INTO notes VALUES ('cookie', 'the login cookie', 'x'), ('other', 'nothing', 'cookie')"))
	array := s.ok("search_text", map[string]any{"pattern": "cookie", "table": "notes", "columns": []any{"title", "body"}})
	for _, columns := range []string{"title,body", " title , body ", "body,title"} {
		got := s.ok("search_text", map[string]any{"pattern": "cookie", "table": "notes", "columns": columns})
		if columns != "body,title" && got != array {
			t.Errorf("columns %q:\n%s\nwant (as an array):\n%s", columns, got, array)
		}
		if strings.Contains(got, ",tag,") {
			t.Errorf("columns %q searched tag:\n%s", columns, got)
		}
	}
	s.ok("append_event", map[string]any{"kind": "prompt", "content": "p"})
	s.ok("append_event", map[string]any{"kind": "decision", "content": "d"})
	for _, kinds := range []any{"prompt", []any{"prompt"}, "prompt, compaction"} {
		if got := s.ok("get_resume_context", map[string]any{"exclude_kinds": kinds}); strings.Contains(got, ",prompt,") || !strings.Contains(got, "decision") {
			t.Errorf("exclude_kinds %v:\n%s", kinds, got)
		}
	}
}
