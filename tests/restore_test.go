package tests

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
)

// restoreRun runs `mcp-sqlite-memory restore ARGS`, retrying while the
// server a test just closed still holds the file, and returns its output
// and exit status.
func restoreRun(t testing.TB, args ...string) (string, int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		out, err := exec.Command(serverBin, append([]string{"restore"}, args...)...).CombinedOutput()
		if !strings.Contains(string(out), "a server is using") || time.Now().After(deadline) {
			return string(out), exitCode(err)
		}
		sleepBriefly()
	}
}

// restoreOK is restoreRun that must succeed.
func restoreOK(t testing.TB, args ...string) string {
	t.Helper()
	out, code := restoreRun(t, args...)
	if code != 0 {
		t.Fatalf("restore %v: exit %d\n%s", args, code, out)
	}
	return out
}

// queryText runs one query on a connection of its own (closed at once, so
// that no connection of the test lingers beside the restore) and returns
// its rows, one line per row, values joined by '|'.
func queryText(t *testing.T, db, query string) string {
	t.Helper()
	rows, err := sqlitetest.FileRows(db, query)
	if err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return sqlitetest.Text(rows)
}

// verifyExit runs `verify --db db` and returns its exit status and output.
func verifyExit(t *testing.T, db string) (int, string) {
	t.Helper()
	out, err := exec.Command(serverBin, "verify", "--db", db).CombinedOutput()
	return exitCode(err), string(out)
}

// sessionAfterSnapshot runs the session: notes written, an event,
// a destructive_query (which snapshots), then an event, a checkpoint and
// another note after the snapshot. The server is stopped; it returns the
// snapshot's path.
func sessionAfterSnapshot(t *testing.T, db string) string {
	t.Helper()
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('a'), ('b'), ('c')"))
	s.ok("append_event", map[string]any{"content": "three notes written"})
	text := s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes WHERE id > 1", "reason": "cleanup"})
	snap := strings.TrimSpace(text[strings.Index(text, "snapshot: ")+len("snapshot: "):])
	s.ok("append_event", map[string]any{"content": "deleted two notes", "kind": "decision"})
	s.ok("checkpoint", map[string]any{"summary": "after the delete"})
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('d')"))

	out, err := exec.Command(serverBin, "restore", "--db", db, snap).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "a server is using "+db) || !strings.Contains(string(out), "stop it") {
		t.Fatalf("restore while the server runs: exit %d\n%s", exitCode(err), out)
	}
	s.audited(db)
	s.c.Close()
	return snap
}

// TestRestoreKeepsTheMemory is issue 25's first case: a restore puts the
// agent's rows back and never rewinds the memory; it records itself, and
// its safety snapshot undoes it.
func TestRestoreKeepsTheMemory(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	snap := sessionAfterSnapshot(t, db)
	auditBefore := queryText(t, db, "SELECT count(*) FROM query_log")

	out := restoreOK(t, "--db", db, "--reason", "bring the notes back", snap)
	for _, want := range []string{
		"safety snapshot of the current state: ",
		"notes: 2 -> 3, replaced",
		"kept as they are (the server's): memory_events 2 rows, memory_checkpoints 1 row, query_log ",
		"memory event 3 (kind restore) records it",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("restore's output lacks %q:\n%s", want, out)
		}
	}
	safety := out[strings.Index(out, "safety snapshot of the current state: ")+len("safety snapshot of the current state: "):]
	safety = safety[:strings.IndexByte(safety, '\n')]
	if filepath.Dir(safety) != filepath.Dir(snap) || !strings.HasSuffix(safety, "Z.pre-restore.db") {
		t.Fatalf("safety snapshot %s, want a .pre-restore snapshot beside %s", safety, snap)
	}

	if got := queryText(t, db, "SELECT body FROM notes ORDER BY id"); got != "a\nb\nc\n" {
		t.Errorf("notes after the restore:\n%s", got)
	}
	if got := queryText(t, db, "SELECT id, kind, content FROM memory_events WHERE id < 3 ORDER BY id"); got != "1|note|three notes written\n2|decision|deleted two notes\n" {
		t.Errorf("events appended before and after the snapshot:\n%s", got)
	}
	if got := queryText(t, db, "SELECT summary, last_event_id FROM memory_checkpoints"); got != "after the delete|2\n" {
		t.Errorf("the checkpoint after the snapshot: %q", got)
	}
	event := queryText(t, db, "SELECT kind, content FROM memory_events WHERE id = 3")
	for _, want := range []string{"restore|restored the agent's objects from " + snap, "reason: bring the notes back", "the state before is kept in " + safety, "tables replaced: notes (2 -> 3 rows)"} {
		if !strings.Contains(event, want) {
			t.Errorf("the restore event lacks %q:\n%s", want, event)
		}
	}
	if code, vout := verifyExit(t, db); code != 0 || !strings.Contains(vout, `"events": 3`) {
		t.Fatalf("verify after the restore: exit %d %s", code, vout)
	}
	var n int
	fmt.Sscan(auditBefore, &n)
	if got := queryText(t, db, "SELECT count(*), max(id) = "+fmt.Sprint(n+1)+" FROM query_log"); got != fmt.Sprintf("%d|1\n", n+1) {
		t.Errorf("audit rows after the restore: %s (had %d)", got, n)
	}
	if got := queryText(t, db, "SELECT tool, ok, json_extract(detail, '$.reason'), json_extract(detail, '$.safety_snapshot') FROM query_log ORDER BY id DESC LIMIT 1"); got != "restore|1|bring the notes back|"+safety+"\n" {
		t.Errorf("the restore's audit row: %q", got)
	}

	// The safety snapshot puts back the state the restore replaced; the
	// chain grows again.
	restoreOK(t, "--db", db, safety)
	if got := queryText(t, db, "SELECT body FROM notes ORDER BY id"); got != "a\nd\n" {
		t.Errorf("notes after restoring the safety snapshot:\n%s", got)
	}
	if got := queryText(t, db, "SELECT id, kind FROM memory_events WHERE id > 2 ORDER BY id"); got != "3|restore\n4|restore\n" {
		t.Errorf("events after the second restore:\n%s", got)
	}
	s := start(t, db)
	if text := s.ok("get_resume_context", map[string]any{}); !strings.Contains(text, "chain ok (4 events)") {
		t.Errorf("get_resume_context after two restores:\n%s", text)
	}
	s.c.Close()

	// A snapshot that is not there: the newest ones are listed.
	out, code := restoreRun(t, "--db", db, filepath.Join(filepath.Dir(snap), "memory.20200101T000000.000Z.db"))
	if code != 1 || !strings.Contains(out, "no snapshot at") || !strings.Contains(out, "the newest in "+filepath.Dir(snap)+" are:") || !strings.Contains(out, filepath.Base(snap)) || !strings.Contains(out, filepath.Base(safety)) {
		t.Errorf("restore of a missing snapshot: exit %d\n%s", code, out)
	}
}

// TestRestoreEverything: the whole file comes back only when asked, and
// the command says which memory rows that discards.
func TestRestoreEverything(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	snap := sessionAfterSnapshot(t, db)
	out, code := restoreRun(t, "--db", db, "--everything", "--dry-run", snap)
	if code != 0 || !strings.Contains(out, "dry run: nothing was changed") || !strings.Contains(out, "memory rows discarded (newer than the snapshot): memory_events ids 2-2 (1 row), memory_checkpoints ids 1-1 (1 row), query_log ids ") {
		t.Fatalf("--everything --dry-run: exit %d\n%s", code, out)
	}
	if got := queryText(t, db, "SELECT count(*) FROM memory_events"); got != "2\n" {
		t.Fatalf("the dry run changed the memory: %s events", got)
	}
	out = restoreOK(t, "--db", db, "--everything", "--reason", "start over", snap)
	if !strings.Contains(out, "memory rows discarded (newer than the snapshot): memory_events ids 2-2 (1 row), memory_checkpoints ids 1-1 (1 row)") || !strings.Contains(out, "restored the whole file; memory event 2 (kind restore) records it") {
		t.Errorf("--everything output:\n%s", out)
	}
	if got := queryText(t, db, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1|note\n2|restore\n" {
		t.Errorf("events after --everything:\n%s", got)
	}
	if got := queryText(t, db, "SELECT count(*) FROM memory_checkpoints"); got != "0\n" {
		t.Errorf("checkpoints after --everything: %s", got)
	}
	if got := queryText(t, db, "SELECT content FROM memory_events WHERE id = 2"); !strings.Contains(got, "reason: start over") || !strings.Contains(got, "memory rows discarded: memory_events ids 2-2 (1 row)") {
		t.Errorf("the restore event:\n%s", got)
	}
	if got := queryText(t, db, "SELECT body FROM notes ORDER BY id"); got != "a\nb\nc\n" {
		t.Errorf("notes after --everything:\n%s", got)
	}
	if code, vout := verifyExit(t, db); code != 0 {
		t.Fatalf("verify after --everything: exit %d %s", code, vout)
	}
}

// sqlite3Shell is the sqlite3 CLI on a database, driven line by line.
type sqlite3Shell struct {
	t   *testing.T
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

func startSQLite3(t *testing.T, db string) *sqlite3Shell {
	t.Helper()
	bin, err := exec.LookPath("sqlite3")
	if err != nil {
		t.Skip("sqlite3 CLI not installed (.ci/run installs it)")
	}
	cmd := exec.Command(bin, db)
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	sh := &sqlite3Shell{t: t, cmd: cmd, in: in, out: bufio.NewReader(stdout)}
	t.Cleanup(func() {
		in.Close()
		_ = cmd.Wait()
	})
	return sh
}

// run sends sqlText and waits until the shell has run it.
func (sh *sqlite3Shell) run(sqlText string) string {
	sh.t.Helper()
	if _, err := io.WriteString(sh.in, sqlText+"\nSELECT 'done-marker';\n"); err != nil {
		sh.t.Fatal(err)
	}
	var b strings.Builder
	for {
		line, err := sh.out.ReadString('\n')
		if err != nil {
			sh.t.Fatalf("sqlite3: %v after %q", err, b.String())
		}
		if strings.TrimSpace(line) == "done-marker" {
			return b.String()
		}
		b.WriteString(line)
	}
}

// TestRestoreBesideSQLite3 is issue 17's fifth case: restore goes through
// SQLite, refuses while another program is in a transaction on the file
// (saying who and what to do), and works while it only has the file open,
// which then reads the restored rows.
func TestRestoreBesideSQLite3(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("SQLite's locks on Windows belong to a handle and cannot be read without taking them: there a reader keeps its snapshot (WAL) and only a writer makes restore refuse")
	}
	db := newDB(t)
	snap := sessionAfterSnapshot(t, db)
	sh := startSQLite3(t, db)
	pid := fmt.Sprint(sh.cmd.Process.Pid)

	if got := sh.run("BEGIN; SELECT count(*) FROM notes;"); strings.TrimSpace(got) != "2" {
		t.Fatalf("sqlite3 read: %q", got)
	}
	out, code := restoreRun(t, "--db", db, snap)
	if code != 1 || !strings.Contains(out, "sqlite3 (pid "+pid+") has a read transaction open on "+db) || !strings.Contains(out, "End that transaction") || !strings.Contains(out, "Nothing was changed") {
		t.Fatalf("restore beside a read transaction: exit %d\n%s", code, out)
	}
	sh.run("COMMIT; BEGIN IMMEDIATE;")
	out, code = restoreRun(t, "--db", db, snap)
	if code != 1 || !strings.Contains(out, "sqlite3 (pid "+pid+") has a write transaction open") {
		t.Fatalf("restore beside a write transaction: exit %d\n%s", code, out)
	}
	sh.run("ROLLBACK;")
	if got := queryText(t, db, "SELECT count(*) FROM notes"); got != "2\n" {
		t.Fatalf("a refused restore changed the notes: %s", got)
	}

	// Open, between transactions: the restore goes ahead through SQLite's
	// locks, and the shell's next read sees the restored rows.
	out = restoreOK(t, "--db", db, snap)
	if !strings.Contains(out, "note: sqlite3 (pid "+pid+") has the database open") {
		t.Errorf("restore beside an open sqlite3 does not say so:\n%s", out)
	}
	if got := sh.run("SELECT group_concat(body) FROM notes; PRAGMA integrity_check;"); got != "a,b,c\nok\n" {
		t.Errorf("sqlite3 after the restore: %q", got)
	}
	sh.run("INSERT INTO notes(body) VALUES ('from sqlite3');")
	sh.in.Close()
	_ = sh.cmd.Wait()
	if got := queryText(t, db, "SELECT count(*) FROM notes"); got != "4\n" {
		t.Errorf("notes after sqlite3 wrote: %s", got)
	}
	if code, vout := verifyExit(t, db); code != 0 {
		t.Fatalf("verify: exit %d %s", code, vout)
	}
	if _, err := os.Stat(db + "-wal"); err == nil {
		t.Log("the -wal file outlived the last connection (fine: SQLite removes it when it can)")
	}
}
