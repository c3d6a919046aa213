// Package tests holds the end-to-end tests: they build the real binaries
// once, start the server as an MCP host would, and drive it over stdio with
// mcp-go's client. They import some of the project's packages for
// fixtures and checks (cli, eval, ipc, policy, rawsqlite, sampledb,
// sandbox, snapshot); the servers they test are the built binaries.
package tests

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
	_ "modernc.org/sqlite"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// Paths of the binaries built once for all tests: the server with its lean
// worker beside it, as `go install ./cmd/...` leaves them, and the same
// server alone in a folder of its own, where it re-runs itself as worker;
// beside them the model-driven evaluation, mcp-sqlite-memory-eval.
var (
	serverBin      string
	workerBin      string
	aloneServerBin string
	evalBin        string
)

func TestMain(m *testing.M) {
	if db := os.Getenv(neighbourEnv); db != "" {
		os.Exit(runNeighbour(db))
	}
	if os.Getenv(rssProbeEnv) != "" {
		os.Exit(runRSSProbe(os.Args[1:]))
	}
	dir, err := os.MkdirTemp("", "mcp-sqlite-memory-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	exe := ""
	if runtime.GOOS == "windows" {
		exe = ".exe"
	}
	serverBin = filepath.Join(dir, "mcp-sqlite-memory"+exe)
	workerBin = filepath.Join(dir, "mcp-sqlite-memory-worker"+exe)
	evalBin = filepath.Join(dir, "mcp-sqlite-memory-eval"+exe)
	aloneServerBin = filepath.Join(dir, "alone", "mcp-sqlite-memory"+exe)
	// The default build (cgo where a C compiler is present), as go install
	// makes it: the front starts its workers confined, so no build needs a
	// re-execution to confine its threads.
	raceLogs := ""
	serverFlags := []string{}
	if os.Getenv(raceEnv) != "" {
		// The front under the race detector, its workers as usual: the
		// front is where the concurrency is (parallel calls, the pool,
		// cancellation, progress, the audit queue), and a race-built
		// worker starts too slowly for the tests' query timeouts. Reports
		// go to files, not to the stderr the tests read, and do not change
		// exit codes; they fail the run below.
		raceLogs = filepath.Join(dir, "race")
		serverFlags = append(serverFlags, "-race")
		os.Setenv("GORACE", "log_path="+raceLogs+" exitcode=0")
	}
	if prebuilt := os.Getenv(prebuiltEnv); prebuilt != "" {
		// A machine without Go (Windows under Wine, a native Windows CI
		// job) runs the suite against the pair built elsewhere: copied, so
		// that they sit side by side as go install leaves them.
		for bin, name := range map[string]string{serverBin: "mcp-sqlite-memory" + exe, workerBin: "mcp-sqlite-memory-worker" + exe, evalBin: "mcp-sqlite-memory-eval" + exe} {
			if err := copyFile(filepath.Join(prebuilt, name), bin); err != nil {
				fmt.Fprintf(os.Stderr, "%s=%s: %v\n", prebuiltEnv, prebuilt, err)
				os.RemoveAll(dir)
				os.Exit(1)
			}
		}
	} else {
		buildBinaries(dir, serverFlags)
	}
	if err := copyFile(serverBin, aloneServerBin); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	if raceLogs != "" && reportRaces(raceLogs) {
		code = 1
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// buildBinaries builds the server (with flags) and its lean worker into
// serverBin and workerBin, as go install builds them, but for the server's
// test hook (testTags), and the eval command into evalBin.
func buildBinaries(dir string, serverFlags []string) {
	for bin, pkg := range map[string]string{serverBin: "../cmd/mcp-sqlite-memory", workerBin: "../cmd/mcp-sqlite-memory-worker", evalBin: "../cmd/mcp-sqlite-memory-eval"} {
		args := []string{"build", "-o", bin}
		if bin == serverBin {
			args = append(args, "-tags", testTags)
			args = append(args, serverFlags...)
		}
		out, err := exec.Command("go", append(args, pkg)...).CombinedOutput()
		if err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", pkg, err, out)
			os.RemoveAll(dir)
			os.Exit(1)
		}
	}
}

// testTags are the build tags of the server the tests run: testhold
// links the spawner's hold (ipc/testhold.go, TestNoWorkerOutsideItsJob),
// which a shipped binary leaves out. A prebuilt server (prebuiltEnv) must
// be built with them too (.ci/windows.sh does).
const testTags = "testhold"

// prebuiltEnv names a folder holding mcp-sqlite-memory,
// mcp-sqlite-memory-worker and mcp-sqlite-memory-eval (with .exe on
// Windows) built elsewhere:
// TestMain uses them instead of building. .ci/windows.sh sets it to run
// this package as a Windows binary under Wine, where there is no Go.
const prebuiltEnv = "MCP_SQLITE_E2E_BIN"

// raceEnv set to anything builds the server with -race (see TestMain);
// .ci/run sets it for one pass over this package.
const raceEnv = "MCP_SQLITE_E2E_RACE"

// reportRaces prints every race report the race-built servers wrote and
// says whether there was one.
func reportRaces(prefix string) bool {
	files, _ := filepath.Glob(prefix + ".*")
	for _, f := range files {
		data, _ := os.ReadFile(f)
		fmt.Fprintf(os.Stderr, "race detector report from the server (%s):\n%s\n", filepath.Base(f), data)
	}
	return len(files) > 0
}

// copyFile copies an executable, making the folder of dst.
func copyFile(src, dst string) error {
	data, err := os.ReadFile(src)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	return os.WriteFile(dst, data, 0o755)
}

// session is one running server and its client.
type session struct {
	t   testing.TB
	c   *client.Client
	db  string
	cmd *exec.Cmd
	// calls counts the tool calls made through callResult; each writes one
	// audit row.
	calls atomic.Int64
	// auditBase is how many audit rows db held when the session began.
	auditBase int
}

// markAuditBase records the audit rows db holds now, before the session's
// first call (see audited).
// Read-only, and only a file that is there: it must change nothing.
func (s *session) markAuditBase() {
	if fi, err := os.Stat(s.db); err != nil || !fi.Mode().IsRegular() {
		return
	}
	db, err := sql.Open("sqlite", "file:"+s.db+"?mode=ro&_pragma=busy_timeout(5000)")
	if err != nil {
		return
	}
	defer db.Close()
	var n int
	if db.QueryRow(`SELECT count(*) FROM query_log`).Scan(&n) == nil {
		s.auditBase = n
	}
}

// start launches the server binary on db with extra flags and initializes
// an MCP session over its stdio.
func start(t testing.TB, db string, flags ...string) *session {
	t.Helper()
	return startEnv(t, db, nil, flags...)
}

// startEnv is start with env (KEY=value) added to the server's environment.
func startEnv(t testing.TB, db string, env []string, flags ...string) *session {
	t.Helper()
	args := append([]string{"--db", db}, flags...)
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(serverBin, env, args, trackServer(db, &cmd))
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	s := &session{t: t, c: c, db: db, cmd: cmd}
	t.Cleanup(func() { c.Close() })
	s.guardLocks()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v", err)
	}
	s.markAuditBase()
	return s
}

// call runs one tool and returns its text and whether it is a tool error.
func (s *session) call(tool string, args map[string]any) (string, bool) {
	s.t.Helper()
	res := s.callResult(tool, args)
	var parts []string
	for _, c := range res.Content {
		if tc, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n"), res.IsError
}

func (s *session) callResult(tool string, args map[string]any) *mcp.CallToolResult {
	s.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	req := mcp.CallToolRequest{}
	req.Params.Name = tool
	req.Params.Arguments = args
	s.calls.Add(1)
	res, err := s.c.CallTool(ctx, req)
	if err != nil {
		s.t.Fatalf("%s: protocol error: %v", tool, err)
	}
	return res
}

// audited waits until the audit log at path holds a row for every tool
// call this session made (beyond the rows of the session's database when
// it began). A reply does not wait for its audit row (SPEC 5; only the
// server's next call does), so a test that reads query_log right after a
// call could miss the row. With other sessions writing to the same file at
// once, wait for the row's content instead.
func (s *session) audited(path string) {
	s.t.Helper()
	want := s.calls.Load()
	if path == s.db {
		want += int64(s.auditBase)
	}
	all := 0
	if !waitFor(10*time.Second, func() bool { all, _ = auditRows(s.t, path); return int64(all) >= want }) {
		s.t.Fatalf("%d audit rows after %d tool calls", all, want)
	}
}

// ok calls a tool that must succeed and returns its text.
func (s *session) ok(tool string, args map[string]any) string {
	s.t.Helper()
	text, isErr := s.call(tool, args)
	if isErr {
		s.t.Fatalf("%s %s: unexpected error: %s", tool, boundedArgs(args), bounded(text))
	}
	return text
}

// fails calls a tool that must fail with code and returns the text.
func (s *session) fails(tool string, args map[string]any, code string) string {
	s.t.Helper()
	text, isErr := s.call(tool, args)
	if !isErr || !strings.HasPrefix(text, code+": ") {
		s.t.Fatalf("%s %s: got (error=%v) %q, want a %s error", tool, boundedArgs(args), isErr, bounded(text), code)
	}
	return text
}

func q(sql string) map[string]any { return map[string]any{"query": sql} }

// newDB returns a path for a fresh database in a test folder.
func newDB(t testing.TB) string {
	return filepath.Join(testDir(t), "memory.db")
}

// openDirect opens the file directly, as a person with sqlite3 would.
func openDirect(t testing.TB, path string) *sql.DB {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// dump is a stable text of every row of the given tables, for before/after
// comparisons.
func dump(t testing.TB, path string, tables ...string) string {
	t.Helper()
	db := openDirect(t, path)
	h := sha256.New()
	for _, table := range tables {
		eachRowText(t, db, table, func(line string) { io.WriteString(h, line) })
	}
	var schema string
	_ = db.QueryRow(`SELECT group_concat(type || name || coalesce(sql, ''), '|') FROM (SELECT * FROM sqlite_schema ORDER BY name)`).Scan(&schema)
	fmt.Fprintf(h, "schema:%s\n", schema)
	return hex.EncodeToString(h.Sum(nil))
}

// eachRowText calls fn with "table:[values]\n" for every row of table, in
// scan order (stable while the table is unchanged).
func eachRowText(t testing.TB, db *sql.DB, table string, fn func(line string)) {
	t.Helper()
	rows, err := sqlitetest.Rows(db, `SELECT * FROM "`+strings.ReplaceAll(table, `"`, `""`)+`"`)
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	for _, vals := range rows {
		fn(fmt.Sprintf("%s:%v\n", table, vals))
	}
}

// auditRows counts query_log rows, optionally only failed ones.
func auditRows(t testing.TB, path string) (all, failed int) {
	t.Helper()
	db := openDirect(t, path)
	if err := db.QueryRow(`SELECT count(*), count(*) FILTER (WHERE ok = 0) FROM query_log`).Scan(&all, &failed); err != nil {
		t.Fatal(err)
	}
	return all, failed
}

// lastAudit returns the newest audit row's tool, ok flag and error.
func lastAudit(t testing.TB, path string) (tool string, ok bool, errText string) {
	t.Helper()
	db := openDirect(t, path)
	var e sql.NullString
	if err := db.QueryRow(`SELECT tool, ok, error FROM query_log ORDER BY id DESC LIMIT 1`).Scan(&tool, &ok, &e); err != nil {
		t.Fatal(err)
	}
	return tool, ok, e.String
}

// bounded returns s whole when short, else its first 2 KiB and its length,
// so that a failing test never floods the terminal with a big value.
func bounded(s string) string {
	const max = 2 << 10
	if len(s) <= max {
		return s
	}
	return fmt.Sprintf("%s... [%d bytes in all]", s[:max], len(s))
}

// boundedArgs formats a tool call's arguments with every string value
// bounded (see bounded): a test's 4 MB query must not flood the terminal
// when the call fails.
func boundedArgs(args map[string]any) string {
	short := make(map[string]any, len(args))
	for k, v := range args {
		if str, ok := v.(string); ok {
			v = bounded(str)
		}
		short[k] = v
	}
	return fmt.Sprint(short)
}
