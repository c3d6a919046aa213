//go:build unix

// End-to-end tests of --replicate with a real Litestream (README,
// Replication). They run when a litestream binary is named by
// MCP_SQLITE_LITESTREAM or found on PATH; scripts/litestream-test.sh
// installs the pinned version and runs them. Unix only: they stop and kill
// processes by pid with signals.

package tests

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Liveness bounds: generous, since the machine may be loaded; nothing is
// asserted about how fast anything happens.
const (
	replicaWait  = 90 * time.Second  // for a write to reach the replica
	shutdownWait = 120 * time.Second // for a server's stop with its final sync
)

// litestreamBin returns the Litestream binary, or skips the test.
func litestreamBin(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("MCP_SQLITE_LITESTREAM"); p != "" {
		abs, err := exec.LookPath(p)
		if err != nil {
			t.Fatalf("MCP_SQLITE_LITESTREAM=%s: %v", p, err)
		}
		return abs
	}
	if p, err := exec.LookPath("litestream"); err == nil {
		return p
	}
	t.Skip("no litestream binary: run scripts/litestream-test.sh (installs Litestream v0.5.18 with go install into a cache folder outside the checkout, then runs these tests), or set MCP_SQLITE_LITESTREAM=/path/to/litestream")
	return ""
}

// replicaURL is the file:// URL of a replica folder.
func replicaURL(dir string) string {
	return (&url.URL{Scheme: "file", Path: filepath.ToSlash(dir)}).String()
}

// writeLitestreamConfig writes the README's config for db, replicating to
// the replica folder with a 1 s sync interval. logToStderr false leaves
// Litestream's default (its log on stdout), which the server must still
// keep out of the protocol stream.
func writeLitestreamConfig(t *testing.T, dir, db, replica string, logToStderr bool) string {
	t.Helper()
	cfg := fmt.Sprintf(`logging:
  level: info
  stderr: %v
dbs:
  - path: %q
    replica:
      url: %q
      sync-interval: 1s
`, logToStderr, db, replicaURL(replica))
	path := filepath.Join(dir, "litestream.yml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// replicated is a server started as the README tells an MCP host to start
// it: mcp-sqlite-memory --db DB --replicate CONFIG.
type replicated struct {
	*session
	stderr *lockedBuffer
	// hangUp stops reading the server's stderr, as a host may once the
	// server has died: Litestream and its guard must survive the broken
	// pipe.
	hangUp func()
	exited chan struct{}
}

func startReplicated(t *testing.T, bin, db, config string, flags ...string) *replicated {
	t.Helper()
	args := append([]string{"--db", db, "--replicate", config, "--litestream", bin}, flags...)
	cmd := exec.Command(serverBin, args...)
	cmd.Env = append(os.Environ(), "TMPDIR="+testDir(t))
	// The stderr pipe is the test's own, so that Wait returns when the
	// server exits, not when the last process sharing its stderr does.
	errRead, errWrite, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = errWrite
	stderr := &lockedBuffer{}
	go func() { _, _ = io.Copy(stderr, errRead) }()
	var hangUp sync.Once
	srv := pipeServer(t, cmd)
	errWrite.Close()
	r := &replicated{stderr: stderr, exited: make(chan struct{}), hangUp: func() { hangUp.Do(func() { errRead.Close() }) }}
	go func() { _ = srv.wait(); close(r.exited) }()
	t.Cleanup(func() {
		// Nothing may still write into the test's folders when they are
		// removed: not the guard's final sync either.
		killAndWait(t, append(r.pids(guardPIDRE), r.pids(litestreamPIDRE)...)...)
		_ = cmd.Process.Kill()
		<-r.exited
		r.hangUp()
		if t.Failed() {
			t.Logf("server stderr (%s):\n%s", db, stderr.String())
		}
	})
	s, err := srv.session(t, db, "litestream-e2e", 60*time.Second)
	if err != nil {
		t.Fatalf("initialize: %v\nstderr:\n%s", err, stderr.String())
	}
	r.session = s
	return r
}

var (
	litestreamPIDRE = regexp.MustCompile(`litestream_pid=(\d+)`)
	guardPIDRE      = regexp.MustCompile(`guard_pid=(\d+)`)
)

// pids are the process ids the server's log names with re.
func (r *replicated) pids(re *regexp.Regexp) []int {
	var pids []int
	for _, m := range re.FindAllStringSubmatch(r.stderr.String(), -1) {
		if pid, err := strconv.Atoi(m[1]); err == nil {
			pids = append(pids, pid)
		}
	}
	return pids
}

// killAndWait kills the processes with SIGKILL and waits until each is
// gone or a zombie (a killed server's descendants are reparented, and the
// container's init may not reap them).
func killAndWait(t *testing.T, pids ...int) {
	t.Helper()
	for _, pid := range pids {
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
	deadline := time.Now().Add(shutdownWait)
	for _, pid := range pids {
		for {
			stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
			if err != nil && syscall.Kill(pid, 0) != nil {
				break // gone (or no /proc here and no such process)
			}
			// "pid (comm) S ...": the state follows the last ')'.
			if i := bytes.LastIndexByte(stat, ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				break
			}
			if time.Now().After(deadline) {
				t.Errorf("process %d still runs %s after SIGKILL", pid, shutdownWait)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// litestreamPID is the pid of the server's Litestream, from its log.
func (r *replicated) litestreamPID() int {
	r.t.Helper()
	r.waitLog("litestream_pid=")
	pids := r.pids(litestreamPIDRE)
	return pids[len(pids)-1]
}

// waitLog waits until the server's stderr contains s.
func (r *replicated) waitLog(s string) {
	r.t.Helper()
	deadline := time.Now().Add(replicaWait)
	for !strings.Contains(r.stderr.String(), s) {
		if time.Now().After(deadline) {
			r.t.Fatalf("the server's log never said %q:\n%s", s, r.stderr.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stop closes the session as a host does (stdin closed) and waits for the
// server to exit after its final sync.
func (r *replicated) stop() {
	r.t.Helper()
	r.c.Close()
	select {
	case <-r.exited:
	case <-time.After(shutdownWait):
		r.t.Fatalf("the server did not exit after its stdin closed:\n%s", r.stderr.String())
	}
	if code := r.cmd.ProcessState.ExitCode(); code != 0 {
		r.t.Fatalf("server exit status %d:\n%s", code, r.stderr.String())
	}
}

// appendEvents appends n events and returns their contents.
func (r *replicated) appendEvents(prefix string, n int) []string {
	r.t.Helper()
	var contents []string
	for i := range n {
		c := fmt.Sprintf("%s %d", prefix, i+1)
		r.ok("append_event", map[string]any{"content": c, "kind": "note"})
		contents = append(contents, c)
	}
	return contents
}

// chainEvent is one row of memory_events as stored.
type chainEvent struct {
	ID       int
	Content  string
	PrevHash string
	Hash     string
}

// readChain reads every event of a database file directly.
func readChain(t *testing.T, db string) []chainEvent {
	t.Helper()
	conn := openDirect(t, db)
	rows, err := conn.Query(`SELECT id, content, prev_hash, hash FROM memory_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []chainEvent
	for rows.Next() {
		var e chainEvent
		if err := rows.Scan(&e.ID, &e.Content, &e.PrevHash, &e.Hash); err != nil {
			t.Fatal(err)
		}
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	conn.Close()
	return out
}

// restoreLatest runs the README's restore: litestream restore -o OUT URL.
func restoreLatest(t *testing.T, bin, replica, out string, extra ...string) {
	t.Helper()
	args := append(append([]string{"restore", "-o", out}, extra...), replicaURL(replica))
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("litestream %s: %v\n%s", strings.Join(args, " "), err, b)
	}
}

// verifyDB runs mcp-sqlite-memory verify --db and insists on exit 0.
func verifyDB(t *testing.T, db string) verification {
	t.Helper()
	out, err := exec.Command(serverBin, "verify", "--db", db).Output()
	if err != nil {
		t.Fatalf("verify --db %s: exit %d: %s", db, exitCode(err), out)
	}
	var v verification
	if err := json.Unmarshal(out, &v); err != nil || !v.OK {
		t.Fatalf("verify --db %s: %s (%v)", db, out, err)
	}
	return v
}

// waitReplicaHead restores the replica into scratch files until its chain
// reaches event id want: the "one sync interval" of the issue, waited for
// rather than slept.
func waitReplicaHead(t *testing.T, bin, replica string, want int) {
	t.Helper()
	scratch := testDir(t)
	deadline := time.Now().Add(replicaWait)
	for i := 0; ; i++ {
		out := filepath.Join(scratch, fmt.Sprintf("probe%d.db", i))
		err := exec.Command(bin, "restore", "-o", out, replicaURL(replica)).Run()
		if err == nil {
			if chain := readChain(t, out); len(chain) >= want {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("the replica did not reach event %d within %s (last restore: %v)", want, replicaWait, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// checkpointAnchor returns the newest checkpoint's event id and head hash.
func checkpointAnchor(t *testing.T, db string) (int, string) {
	t.Helper()
	conn := openDirect(t, db)
	defer conn.Close()
	var id int
	var hash string
	if err := conn.QueryRow(`SELECT last_event_id, head_hash FROM memory_checkpoints ORDER BY id DESC LIMIT 1`).Scan(&id, &hash); err != nil {
		t.Fatalf("checkpoint of %s: %v", db, err)
	}
	return id, hash
}

// samePrefix fails unless got is the first len(got) events of want, hash
// for hash.
func samePrefix(t *testing.T, what string, got, want []chainEvent) {
	t.Helper()
	if len(got) > len(want) {
		t.Fatalf("%s: %d events, more than the %d written", what, len(got), len(want))
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("%s: event %d is %+v, want %+v", what, i+1, got[i], want[i])
		}
	}
}

// TestLitestreamCrashRestore is the first case: events and a
// checkpoint are appended under --replicate, the replica catches up (one
// sync interval, waited for), a few more events follow, then Litestream,
// its guard and the server are killed with SIGKILL, as a machine that dies. A restore
// into a fresh folder verifies; it holds every event up to the last sync
// with the same hashes, the checkpoint anchored, and of the later events
// exactly an unbroken prefix: the chain shows what arrived.
func TestLitestreamCrashRestore(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	db := filepath.Join(dir, "laptop", "memory.db")
	replica := filepath.Join(dir, "replica")
	config := writeLitestreamConfig(t, dir, db, replica, true)

	srv := startReplicated(t, bin, db, config)
	const synced, late = 20, 5
	srv.appendEvents("before the crash", synced)
	srv.ok("checkpoint", map[string]any{"summary": "twenty events in"})
	waitReplicaHead(t, bin, replica, synced)
	srv.appendEvents("in the last sync interval", late)

	// The machine dies: the guard and Litestream first, so that neither
	// can sync again, then the server.
	litestream := srv.litestreamPID() // logged by the guard, after guard_pid
	killAndWait(t, srv.pids(guardPIDRE)[0], litestream)
	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	written := readChain(t, db)
	if len(written) != synced+late {
		t.Fatalf("the source has %d events, want %d", len(written), synced+late)
	}

	restored := filepath.Join(testDir(t), "memory.db")
	restoreLatest(t, bin, replica, restored)
	v := verifyDB(t, restored)
	got := readChain(t, restored)
	if len(got) < synced || v.Events != len(got) {
		t.Fatalf("restored chain: %d events (verify says %d); every one of the first %d was synced", len(got), v.Events, synced)
	}
	samePrefix(t, "restored chain", got, written)
	if v.HeadHash != got[len(got)-1].Hash {
		t.Fatalf("verify head %s, last event %s", v.HeadHash, got[len(got)-1].Hash)
	}
	id, hash := checkpointAnchor(t, restored)
	if id != synced || hash != written[synced-1].Hash {
		t.Fatalf("restored checkpoint anchored at event %d %s, want %d %s", id, hash, synced, written[synced-1].Hash)
	}
	t.Logf("restored %d of %d events: %d of the %d appended in the last sync interval arrived", len(got), len(written), len(got)-synced, late)

	// The restored file serves: the resume context finds the checkpoint
	// and the chain intact.
	s := start(t, restored)
	text := s.ok("get_resume_context", nil)
	if !strings.Contains(text, "# checkpoint 1 |") || !strings.Contains(text, fmt.Sprintf("| chain ok (%d events)", len(got))) {
		t.Fatalf("get_resume_context on the restored file:\n%s", text)
	}
}

// TestLitestreamMoveToAnotherMachine is the second case, with no
// waiting at all: a session ends (the host closes stdin) and its final
// sync puts every write in the replica; "another machine" restores it,
// verifies, resumes under --replicate to the same replica and appends; a
// third restore shows one chain continuing from the restored head. The
// first machine's config keeps Litestream's default log to stdout, which
// the server must keep out of the protocol (the session would break).
func TestLitestreamMoveToAnotherMachine(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	root := testDir(t)
	replica := filepath.Join(root, "replica")

	dirA := filepath.Join(root, "machine-a")
	dbA := filepath.Join(dirA, "memory.db")
	a := startReplicated(t, bin, dbA, writeLitestreamConfig(t, root, dbA, replica, false))
	a.appendEvents("on machine A", 10)
	a.ok("checkpoint", map[string]any{"summary": "machine A's work"})
	a.waitLog(`msg="initialized db"`)
	a.stop()
	chainA := readChain(t, dbA)
	// Started without --replicate, the server says that this database has
	// been replicated and now is not, unless a service replicates it.
	var stderr bytes.Buffer
	plain := exec.Command(serverBin, "call", "-v", "--db", dbA, "verify_chain")
	plain.Stderr = &stderr
	if out, err := plain.Output(); err != nil || !strings.Contains(stderr.String(), "has Litestream state but --replicate is not set") {
		t.Fatalf("a server without --replicate on a replicated database: %v %s\n%s", err, out, stderr.String())
	}

	// Machine B has its own config (its own path, the same replica) and
	// restores with it, as the README does; the folder does not exist yet.
	dirB := filepath.Join(root, "machine-b")
	dbB := filepath.Join(dirB, "data", "memory.db")
	configB := writeLitestreamConfig(t, testDir(t), dbB, replica, true)
	// Started before the restore, the server refuses: its fresh file would
	// become the replica's newest state. It creates nothing.
	txid := maxTXID(t, bin, replica)
	early := exec.Command(serverBin, "--db", dbB, "--replicate", configB, "--litestream", bin)
	early.Stdin = strings.NewReader("")
	if out, err := early.CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "already holds a database") || !strings.Contains(string(out), "litestream restore -config") {
		t.Fatalf("a fresh file against a replica that holds a database: exit %d:\n%s", exitCode(err), out)
	}
	if _, err := os.Stat(dbB); !os.IsNotExist(err) {
		t.Fatalf("the refused start created %s (%v)", dbB, err)
	}
	// Likewise a second machine with a memory of its own pointed at the
	// same replica.
	other := filepath.Join(root, "machine-d", "memory.db")
	if out, err := exec.Command(serverBin, "call", "--db", other, "append_event", `{"content":"machine D's own memory"}`).CombinedOutput(); err != nil {
		t.Fatalf("call: %v\n%s", err, out)
	}
	otherCfg := writeLitestreamConfig(t, testDir(t), other, replica, true)
	if out, err := exec.Command(serverBin, "call", "--db", other, "--replicate", otherCfg, "--litestream", bin, "verify_chain").CombinedOutput(); exitCode(err) != 2 || !strings.Contains(string(out), "already holds a database") {
		t.Fatalf("another memory against a replica that holds one: exit %d:\n%s", exitCode(err), out)
	}
	if got := maxTXID(t, bin, replica); got != txid {
		t.Fatalf("the refused starts changed the replica: txid %s -> %s", txid, got)
	}
	if out, err := exec.Command(bin, "restore", "-config", configB, dbB).CombinedOutput(); err != nil {
		t.Fatalf("litestream restore -config %s %s: %v\n%s", configB, dbB, err, out)
	}
	if v := verifyDB(t, dbB); v.Events != len(chainA) || v.HeadHash != chainA[len(chainA)-1].Hash {
		t.Fatalf("restored on B: %+v, want machine A's head %d %s", v, len(chainA), chainA[len(chainA)-1].Hash)
	}
	samePrefix(t, "restored on B", readChain(t, dbB), chainA)

	b := startReplicated(t, bin, dbB, configB)
	text := b.ok("get_resume_context", nil)
	if !strings.Contains(text, "# checkpoint 1 |") || !strings.Contains(text, "| chain ok (10 events)") {
		t.Fatalf("get_resume_context on machine B:\n%s", text)
	}
	// Litestream's own tables are marked as system tables and no tool may
	// change them: dropping one would stop its checkpoints.
	if tables := b.ok("list_tables", nil); !strings.Contains(tables, "\n_litestream_lock,table,1,") || !strings.Contains(tables, "\n_litestream_seq,table,1,") {
		t.Fatalf("list_tables on a replicated database:\n%s", tables)
	}
	b.fails("destructive_query", map[string]any{"query": "DROP TABLE _litestream_lock", "reason": "looks unused"}, "POLICY_VIOLATION")
	b.appendEvents("on machine B", 5)
	b.stop()
	chainB := readChain(t, dbB)
	if len(chainB) != 15 || chainB[10].PrevHash != chainA[9].Hash {
		t.Fatalf("machine B's first event does not continue machine A's head: %+v", chainB[10:])
	}

	restoredC := filepath.Join(root, "machine-c", "memory.db")
	restoreLatest(t, bin, replica, restoredC)
	if v := verifyDB(t, restoredC); v.Events != 15 {
		t.Fatalf("restored on C: %+v, want 15 events", v)
	}
	got := readChain(t, restoredC)
	if len(got) != len(chainB) {
		t.Fatalf("restored on C: %d events, want %d", len(got), len(chainB))
	}
	samePrefix(t, "restored on C", got, chainB)
}

// TestLitestreamSnapshotRestoreIsANewPoint: a destructive_query snapshot
// restored with `mcp-sqlite-memory restore` (SPEC 9: the agent's objects
// come back, the memory is kept, the chain only grows by a `restore`
// event) replicates as the next session's newest state: a replica restored
// from it holds the snapshot's rows and the whole grown chain, hash for
// hash; and the state before the restore stays restorable by its
// transaction id. A new point in the replica's history, not a divergence.
func TestLitestreamSnapshotRestoreIsANewPoint(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	replica := filepath.Join(dir, "replica")
	config := writeLitestreamConfig(t, dir, db, replica, true)

	srv := startReplicated(t, bin, db, config)
	srv.ok("write_query", q("CREATE TABLE notes (body TEXT)"))
	srv.ok("write_query", q("INSERT INTO notes VALUES ('a'), ('b'), ('c')"))
	srv.appendEvents("before the snapshot", 3)
	text := srv.ok("destructive_query", map[string]any{"query": "DELETE FROM notes", "reason": "test a snapshot restore"})
	snapshot := strings.TrimSpace(text[strings.Index(text, "snapshot: ")+len("snapshot: "):])
	srv.appendEvents("after the snapshot", 2)
	srv.stop()
	before := readChain(t, db)
	beforeTXID := maxTXID(t, bin, replica)

	out := restoreOK(t, "--db", db, "--reason", "bring the notes back", snapshot)
	if want := fmt.Sprintf("memory event %d (kind restore) records it", len(before)+1); !strings.Contains(out, want) {
		t.Fatalf("restore's output lacks %q:\n%s", want, out)
	}
	srv = startReplicated(t, bin, db, config)
	if got := srv.ok("read_query", q("SELECT count(*) AS n FROM notes")); got != "n\n3\n# 1 rows" {
		t.Fatalf("after the snapshot restore: %q", got)
	}
	srv.appendEvents("after the restore", 1)
	srv.stop()
	after := readChain(t, db)
	if len(after) != len(before)+2 {
		t.Fatalf("after the restore and one append: %d events, want %d (kept, plus the restore event and the append)", len(after), len(before)+2)
	}
	samePrefix(t, "the kept memory", before, after)
	restoreEvent := after[len(before)]
	if restoreEvent.PrevHash != before[len(before)-1].Hash || after[len(before)+1].PrevHash != restoreEvent.Hash {
		t.Fatalf("the chain does not grow from the kept head through the restore event: %+v", after[len(before)-1:])
	}
	checkRestored := func(what, file string) {
		t.Helper()
		kind := queryText(t, file, fmt.Sprintf("SELECT kind FROM memory_events WHERE id = %d", restoreEvent.ID))
		if kind != "restore\n" || !strings.Contains(restoreEvent.Content, "restored the agent's objects from "+snapshot) {
			t.Fatalf("%s: event %d is kind %q: %q, want the restore event", what, restoreEvent.ID, kind, restoreEvent.Content)
		}
	}
	checkRestored("the restored file", db)

	latest := filepath.Join(testDir(t), "latest.db")
	restoreLatest(t, bin, replica, latest)
	if v := verifyDB(t, latest); v.Events != len(after) {
		t.Fatalf("latest replica state verifies %d events, want %d", v.Events, len(after))
	}
	if got := readChain(t, latest); len(got) != len(after) {
		t.Fatalf("latest replica state: %d events, want the restored file's %d", len(got), len(after))
	} else {
		samePrefix(t, "latest replica state", got, after)
	}
	checkRestored("latest replica state", latest)
	if got := queryText(t, latest, "SELECT body FROM notes ORDER BY rowid"); got != "a\nb\nc\n" {
		t.Fatalf("latest replica state: notes %q, want the snapshot's a, b, c", got)
	}

	old := filepath.Join(testDir(t), "before-restore.db")
	restoreLatest(t, bin, replica, old, "-txid", beforeTXID)
	verifyDB(t, old)
	if got := readChain(t, old); len(got) != len(before) {
		t.Fatalf("replica at txid %s: %d events, want %d (the state before the restore)", beforeTXID, len(got), len(before))
	} else {
		samePrefix(t, "replica before the restore", got, before)
	}
	if n := countRows(t, old, "notes"); n != 0 {
		t.Fatalf("replica before the restore: %d notes, want 0", n)
	}
}

// maxTXID is the newest transaction id in the replica.
func maxTXID(t *testing.T, bin, replica string) string {
	t.Helper()
	out, err := exec.Command(bin, "ltx", "-json", replicaURL(replica)).Output()
	if err != nil {
		t.Fatalf("litestream ltx: %v", err)
	}
	var files []struct {
		MaxTXID string `json:"max_txid"`
	}
	if err := json.Unmarshal(out, &files); err != nil || len(files) == 0 {
		t.Fatalf("litestream ltx -json: %s (%v)", out, err)
	}
	newest := ""
	for _, f := range files {
		newest = max(newest, f.MaxTXID) // fixed-width hex sorts as text
	}
	return newest
}

func countRows(t *testing.T, db, table string) int {
	t.Helper()
	conn := openDirect(t, db)
	defer conn.Close()
	var n int
	if err := conn.QueryRow(`SELECT count(*) FROM "` + table + `"`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestLitestreamOutlivesKilledServer: a server killed with SIGKILL leaves
// Litestream to finish on its own (its guard sees the server's pipe end and
// stops it cleanly, with a final sync), and `mcp-sqlite-memory restore`
// refuses while that Litestream still runs, since the guard holds the
// server's lock. To observe the refusal deterministically, the replica
// folder is swapped for a plain file across the kill: the final sync fails
// and Litestream retries it (shutdown-sync-timeout) until the folder is
// back. The events appended after the swap reach the replica only through
// that final sync, which must also survive the test no longer reading the
// stderr it shares with the dead server.
func TestLitestreamOutlivesKilledServer(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	replica := filepath.Join(dir, "replica")
	config := writeLitestreamConfig(t, dir, db, replica, true)
	if err := appendFile(config, "shutdown-timeout: 300s\nshutdown-sync-timeout: 300s\n"); err != nil {
		t.Fatal(err)
	}
	srv := startReplicated(t, bin, db, config)
	srv.ok("write_query", q("CREATE TABLE t (a)"))
	text := srv.ok("destructive_query", map[string]any{"query": "DROP TABLE t", "reason": "get a snapshot"})
	snapshot := text[strings.Index(text, "snapshot: ")+len("snapshot: "):]
	srv.appendEvents("synced", 8)
	waitReplicaHead(t, bin, replica, 8)
	srv.waitLog(`msg="initialized db"`) // its signal handler is set up

	away := replica + ".away"
	if err := os.Rename(replica, away); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(replica, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	srv.appendEvents("only the final sync carries these", 4)
	if err := srv.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-srv.exited
	srv.hangUp()
	out, err := exec.Command(serverBin, "restore", "--db", db, snapshot).CombinedOutput()
	if exitCode(err) != 1 || !strings.Contains(string(out), "a server is using") {
		t.Fatalf("restore while the killed server's Litestream runs: exit %d: %s", exitCode(err), out)
	}
	// Let Litestream log a few failed retries (every 500 ms) into the pipe
	// nobody reads any more: without the guard's relay that kills it.
	time.Sleep(2 * time.Second)
	if err := os.Remove(replica); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(away, replica); err != nil {
		t.Fatal(err)
	}
	// Litestream's next retry succeeds and it exits; no wait for a sync
	// interval: its clean stop synced everything. Check the replica before
	// the snapshot restore below rewrites the source.
	waitUnlocked(t, db)
	restored := filepath.Join(testDir(t), "memory.db")
	restoreLatest(t, bin, replica, restored)
	if v := verifyDB(t, restored); v.Events != 12 {
		t.Fatalf("restored after the killed server's Litestream stopped: %+v, want 12 events", v)
	}
	samePrefix(t, "restored", readChain(t, restored), readChain(t, db))
	if out, err := exec.Command(serverBin, "restore", "--db", db, snapshot).CombinedOutput(); err != nil {
		t.Fatalf("restore once Litestream has gone: %v\n%s", err, out)
	}
}

func appendFile(path, text string) error {
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(text); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// waitUnlocked waits until no process holds the server lock on db (the
// lock restore takes), i.e. Litestream has exited.
func waitUnlocked(t *testing.T, db string) {
	t.Helper()
	f, err := os.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	deadline := time.Now().Add(shutdownWait)
	for syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) != nil {
		if time.Now().After(deadline) {
			t.Fatalf("Litestream still holds %s %s after its server was killed", db, shutdownWait)
		}
		time.Sleep(50 * time.Millisecond)
	}
	_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
}

// TestLitestreamTwoServersOneReplicator: two servers on one database
// (SPEC 5) run one Litestream between them; when the first stops, the
// second takes over, and the replica ends with both servers' events.
func TestLitestreamTwoServersOneReplicator(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	replica := filepath.Join(dir, "replica")
	config := writeLitestreamConfig(t, dir, db, replica, true)

	a := startReplicated(t, bin, db, config)
	a.waitLog("replicating with Litestream")
	b := startReplicated(t, bin, db, config)
	b.waitLog("another server on this database runs Litestream")
	a.appendEvents("from A", 3)
	b.appendEvents("from B", 3)
	a.stop()
	b.waitLog("took over replication")
	b.appendEvents("from B after A left", 2)
	b.stop()
	if strings.Count(a.stderr.String()+b.stderr.String(), "litestream_pid=") != 2 {
		t.Fatalf("want one Litestream at a time, started twice in all:\nA:\n%s\nB:\n%s", a.stderr, b.stderr)
	}

	restored := filepath.Join(testDir(t), "memory.db")
	restoreLatest(t, bin, replica, restored)
	if v := verifyDB(t, restored); v.Events != 8 {
		t.Fatalf("restored: %+v, want 8 events", v)
	}
	samePrefix(t, "restored", readChain(t, restored), readChain(t, db))
}

// TestLitestreamReadonlyAuditDB: in the readonly profile --replicate
// replicates the --audit-db file, and the read-only database stays
// byte-identical, with nothing new in its folder.
func TestLitestreamReadonlyAuditDB(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	shopDir := filepath.Join(dir, "data")
	shop := filepath.Join(shopDir, "shop.db")
	if err := os.MkdirAll(shopDir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(serverBin, "sample-db", shop).CombinedOutput(); err != nil {
		t.Fatalf("sample-db: %v\n%s", err, out)
	}
	before := fileState(t, shop)
	audit := filepath.Join(dir, "audit", "shop-audit.db")
	replica := filepath.Join(dir, "replica")
	config := writeLitestreamConfig(t, dir, audit, replica, true)

	srv := startReplicated(t, bin, shop, config, "--profile", "readonly", "--audit-db", audit)
	srv.ok("list_tables", nil)
	srv.ok("query_database", map[string]any{"sql": "SELECT count(*) AS n FROM customers"})
	srv.call("query_database", map[string]any{"sql": "DELETE FROM customers"}) // refused, and audited
	srv.stop()

	restored := filepath.Join(testDir(t), "audit.db")
	restoreLatest(t, bin, replica, restored)
	all, failed := auditRows(t, restored)
	if all != 3 || failed != 1 {
		t.Fatalf("restored audit file: %d rows, %d failed; want 3 and 1", all, failed)
	}
	if after := fileState(t, shop); after != before {
		t.Fatalf("the read-only database or its folder changed: %s -> %s", before, after)
	}
}

// TestReplicateConfigErrors: a config that does not replicate exactly the
// files the server writes stops it at start with exit 2 and a message that
// says what to change.
func TestReplicateConfigErrors(t *testing.T) {
	t.Parallel()
	bin := litestreamBin(t)
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	other := writeLitestreamConfig(t, testDir(t), filepath.Join(dir, "other.db"), filepath.Join(dir, "r"), true)
	shop := filepath.Join(dir, "shop.db")
	if out, err := exec.Command(serverBin, "sample-db", shop).CombinedOutput(); err != nil {
		t.Fatalf("sample-db: %v\n%s", err, out)
	}
	shopConfig := writeLitestreamConfig(t, testDir(t), shop, filepath.Join(dir, "r2"), true)
	audit := filepath.Join(dir, "audit.db")
	both := filepath.Join(dir, "both.yml")
	bothYAML := fmt.Sprintf("dbs:\n  - path: %q\n    replica:\n      url: %q\n  - path: %q\n    replica:\n      url: %q\n",
		audit, replicaURL(filepath.Join(dir, "r3")), shop, replicaURL(filepath.Join(dir, "r4")))
	if err := os.WriteFile(both, []byte(bothYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	withExec := filepath.Join(dir, "exec.yml")
	if err := os.WriteFile(withExec, []byte("exec: mcp-sqlite-memory --db memory.db\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	broken := filepath.Join(dir, "broken.yml")
	if err := os.WriteFile(broken, []byte("dbs:\n  - path: [\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"config lists another database", []string{"--db", db, "--replicate", other}, "does not replicate " + db},
		{"config is not YAML", []string{"--db", db, "--replicate", broken}, "Litestream refuses"},
		{"config runs a command", []string{"--db", db, "--replicate", withExec}, "has an exec: entry"},
		{"config file missing", []string{"--db", db, "--replicate", filepath.Join(dir, "nope.yml")}, "cannot read the Litestream config"},
		{"readonly profile without an audit file", []string{"--profile", "readonly", "--db", shop, "--replicate", shopConfig}, "writes nothing to replicate"},
		{"audit file missing from the config", []string{"--profile", "readonly", "--db", shop, "--audit-db", audit, "--replicate", shopConfig}, "does not replicate " + audit},
		{"readonly database in the config", []string{"--profile", "readonly", "--db", shop, "--audit-db", audit, "--replicate", both}, "lists the read-only database"},
		{"no litestream binary", []string{"--db", db, "--replicate", other, "--litestream", filepath.Join(dir, "no-such-litestream")}, "Litestream not found"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			args := append(tt.args, "--litestream", bin)
			if tt.name == "no litestream binary" {
				args = tt.args
			}
			cmd := exec.Command(serverBin, args...)
			cmd.Stdin = strings.NewReader("")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			if exitCode(err) != 2 || !strings.Contains(stderr.String(), tt.want) || !strings.Contains(stderr.String(), "Try:") {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit 2 and %q with a Try: line", exitCode(err), stderr.String(), tt.want)
			}
			if stdout.Len() != 0 {
				t.Fatalf("stdout must stay empty: %q", stdout.String())
			}
		})
	}
	// The read-only file must not have been touched by Litestream.
	if _, err := os.Stat(shop + "-wal"); err == nil {
		t.Fatal("the read-only database got a WAL file")
	}
}
