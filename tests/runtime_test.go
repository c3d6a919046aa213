package tests

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// runaway is a read that never ends on its own.
const runaway = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"

// waitFor polls cond every 10 ms until it holds or limit passes, and says
// whether it held.
func waitFor(limit time.Duration, cond func() bool) bool {
	deadline := time.Now().Add(limit)
	for {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// auditRow is one query_log row as a test reads it.
type auditRow struct {
	tool, query, errText, detail string
	ok                           bool
	durationMS                   int64
}

// auditLog reads query_log in id order; rows still queued are not there yet.
func auditLog(t *testing.T, path string) []auditRow {
	t.Helper()
	rows, err := openDirect(t, path).Query(`SELECT tool, coalesce(query, ''), ok, coalesce(error, ''), duration_ms, coalesce(detail, '') FROM query_log ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []auditRow
	for rows.Next() {
		var r auditRow
		if err := rows.Scan(&r.tool, &r.query, &r.ok, &r.errText, &r.durationMS, &r.detail); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	return out
}

// waitAudit waits (up to 10 s) for a row whose error starts with prefix.
func waitAudit(t *testing.T, path, prefix string) auditRow {
	t.Helper()
	var found auditRow
	if !waitFor(10*time.Second, func() bool {
		for _, r := range auditLog(t, path) {
			if strings.HasPrefix(r.errText, prefix) {
				found = r
				return true
			}
		}
		return false
	}) {
		t.Fatalf("no audit row %q; rows: %+v", prefix, auditLog(t, path))
	}
	return found
}

// waitWorker waits for the one worker of a server started with
// --standby-workers 0 (so the worker found runs the call).
func waitWorker(t *testing.T, db string) int {
	t.Helper()
	var pid int
	if !waitFor(10*time.Second, func() bool {
		if w := workersOf(db); len(w) == 1 {
			pid = w[0]
			return true
		}
		return false
	}) {
		t.Fatalf("no worker running: %v", workersOf(db))
	}
	return pid
}

// TestCancelRunawayRead: notifications/cancelled from the MCP client kills
// the call's worker at once and audits the call as CANCELLED with its real
// duration; the server goes on serving.
func TestCancelRunawayRead(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--query-timeout", "30", "--standby-workers", "0")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_query"
		req.Params.Arguments = q(runaway)
		_, err := s.c.CallTool(ctx, req)
		errc <- err
	}()
	pid := waitWorker(t, db)
	time.Sleep(200 * time.Millisecond) // the call has run a while
	cancel()
	if err := <-errc; !errors.Is(err, context.Canceled) {
		t.Fatalf("CallTool: %v", err)
	}
	if !waitFor(500*time.Millisecond, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatalf("worker %d still alive 0.5 s after the cancellation", pid)
	}
	row := waitAudit(t, db, "CANCELLED: ")
	if row.tool != "read_query" || row.ok || row.errText != "CANCELLED: cancelled by the client" || row.query != runaway {
		t.Fatalf("audit row %+v", row)
	}
	if row.durationMS < 200 || row.durationMS > 20_000 {
		t.Fatalf("duration_ms %d is not the call's real duration", row.durationMS)
	}
	if got := s.ok("read_query", q("SELECT 41 + 1 AS x")); got != "x\n42\n# 1 rows" {
		t.Fatalf("after the cancellation: %q", got)
	}
}

// TestCancelledWriteLeavesNoTrace: a write_query cancelled mid-statement
// leaves the database as if it never ran.
func TestCancelledWriteLeavesNoTrace(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--query-timeout", "30", "--standby-workers", "0")
	s.ok("write_query", q("CREATE TABLE t(x INTEGER)"))
	s.ok("write_query", q("INSERT INTO t VALUES (1), (2)"))
	before := dump(t, db, "t")
	ctx, cancel := context.WithCancel(context.Background())
	errc := make(chan error, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "write_query"
		// Inserts a row every 100,000 steps, forever.
		req.Params.Arguments = q("INSERT INTO t(x) SELECT x FROM (" + runaway[:strings.Index(runaway, " SELECT count")] + " SELECT x FROM c) WHERE x % 100000 = 0")
		_, err := s.c.CallTool(ctx, req)
		errc <- err
	}()
	waitWorker(t, db)
	time.Sleep(300 * time.Millisecond)
	cancel()
	<-errc
	if !waitFor(2*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatal("worker alive after the cancellation")
	}
	row := waitAudit(t, db, "CANCELLED")
	if row.tool != "write_query" {
		t.Fatalf("audit %+v", row)
	}
	if after := dump(t, db, "t"); after != before {
		t.Fatal("the cancelled write left changes")
	}
	if got := s.ok("write_query", q("INSERT INTO t VALUES (3)")); !strings.HasPrefix(got, "ok: 1 rows affected") {
		t.Fatalf("write after the cancellation: %q", got)
	}
}

// TestCancelledCallGetsNoResponse: after notifications/cancelled the call's
// response never comes; cancelling a finished call or an unknown id is
// ignored.
func TestCancelledCallGetsNoResponse(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	p := startRaw(t, db, "--query-timeout", "30", "--standby-workers", "0")
	p.callLine(2, "read_query", q(runaway))
	waitWorker(t, db)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2,"reason":"user pressed stop"}}`)
	p.callLine(3, "read_query", q("SELECT 1"))
	if seen := p.readUntil(3); !slices.Equal(seen, []int{3}) {
		t.Fatalf("responses %v: the cancelled call 2 was answered", seen)
	}
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":3}}`)
	p.send(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`)
	p.send(`{"jsonrpc":"2.0","id":4,"method":"ping"}`)
	if seen := p.readUntil(4); !slices.Equal(seen, []int{4}) {
		t.Fatalf("responses %v", seen)
	}
	// Two rows: the cancelled call and call 3, which cancelling it late
	// changed nothing for. In either order: the cancelled call's row is
	// queued once its killed worker is reaped, which on a loaded machine
	// can come after call 3 ran in a new worker. Wait for both: a row is
	// written after its reply (SPEC 5), and the ping does not wait for it.
	var rows []auditRow
	waitFor(10*time.Second, func() bool { rows = auditLog(t, db); return len(rows) >= 2 })
	var cancelled, answered int
	for _, r := range rows {
		switch {
		case !r.ok && r.errText == "CANCELLED: cancelled by the client" && r.query == runaway:
			cancelled++
		case r.ok && r.query == "SELECT 1":
			answered++
		}
	}
	if len(rows) != 2 || cancelled != 1 || answered != 1 {
		t.Fatalf("audit rows %+v: want the cancelled call and call 3 (cancelling it late changed nothing)", rows)
	}
}

// TestProgressNotifications: a 3 s call with a progress token hears about
// once a second how long it has run against its timeout; a quick call
// with a token hears nothing.
func TestProgressNotifications(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--query-timeout", "3")
	var mu sync.Mutex
	var got []map[string]any
	// Start (idempotent for the transport) installs the client's
	// notification handler; NewStdioMCPClient does not.
	if err := s.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	s.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method != string(mcp.MethodNotificationProgress) {
			return
		}
		mu.Lock()
		got = append(got, n.Params.AdditionalFields)
		mu.Unlock()
	})
	call := func(token, sql string) *mcp.CallToolResult {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_query"
		req.Params.Arguments = q(sql)
		req.Params.Meta = &mcp.Meta{ProgressToken: token}
		res, err := s.c.CallTool(context.Background(), req)
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	quickStart := time.Now()
	if res := call("quick", "SELECT 1"); res.IsError {
		t.Fatalf("quick call failed: %+v", res)
	}
	// A quick call hears nothing, unless the machine made it run past the
	// first second (a loaded machine, Wine), when one notification is due.
	quickTook := time.Since(quickStart)
	if res := call("slow", runaway); !res.IsError {
		t.Fatal("the runaway call was not stopped")
	}
	mu.Lock()
	defer mu.Unlock()
	got = slices.DeleteFunc(got, func(n map[string]any) bool { return n["progressToken"] == "quick" && quickTook > time.Second })
	if len(got) < 2 {
		t.Fatalf("%d progress notifications during a 3 s call, want about one a second: %v", len(got), got)
	}
	last := 0.0
	for _, n := range got {
		if n["progressToken"] != "slow" {
			t.Fatalf("notification for token %v: %v (that call took %s)", n["progressToken"], n, quickTook)
		}
		p, _ := n["progress"].(float64)
		total, _ := n["total"].(float64)
		msg, _ := n["message"].(string)
		if p <= last || !progressTotalOK(p, total, 3) || !strings.HasPrefix(msg, "read_query running for ") {
			t.Fatalf("notification %v after progress %v: want increasing elapsed seconds of total 3", n, last)
		}
		last = p
	}
}

// progressTotalOK: a notification's total is the call's timeout, except
// for a tick that comes after it while the stopped worker is still being
// reaped (beside CPU burners, 0.3 s late): then the call ends at the
// latest now, and total equals progress.
func progressTotalOK(progress, total, timeout float64) bool {
	return total == timeout || (progress >= timeout && total == progress)
}

// TestHeldWriteLockDelaysNoRead: while another process holds BEGIN
// IMMEDIATE, reads are answered at once (a server even starts), their
// audit rows wait in the queue, and all land in call order once the lock
// is released.
func TestHeldWriteLockDelaysNoRead(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	first := start(t, db)
	first.ok("write_query", q("CREATE TABLE t(x)"))
	first.c.Close()

	conn, err := openDirect(t, db).Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(context.Background(), "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	locked := true
	defer func() {
		if locked {
			_, _ = conn.ExecContext(context.Background(), "ROLLBACK")
		}
		conn.Close()
	}()
	before := len(auditLog(t, db))

	s := start(t, db)
	for i := range 3 {
		began := time.Now()
		if got := s.ok("read_query", q(fmt.Sprintf("SELECT %d AS n", i))); got != fmt.Sprintf("n\n%d\n# 1 rows", i) {
			t.Fatalf("read %d: %q", i, got)
		}
		// It took 5 s when the audit row was written on the call path.
		if d := time.Since(began); d > 2*time.Second {
			t.Fatalf("read %d took %s while another process held the write lock", i, d)
		}
	}
	if n := len(auditLog(t, db)); n != before {
		t.Fatalf("%d audit rows written through a held write lock", n-before)
	}
	if _, err := conn.ExecContext(context.Background(), "COMMIT"); err != nil {
		t.Fatal(err)
	}
	locked = false
	if !waitFor(10*time.Second, func() bool { return len(auditLog(t, db)) == before+3 }) {
		t.Fatalf("audit rows after the release: %+v", auditLog(t, db)[before:])
	}
	for i, r := range auditLog(t, db)[before:] {
		if want := fmt.Sprintf("SELECT %d AS n", i); r.query != want || !r.ok {
			t.Fatalf("row %d: %+v, want %q: not in call order", i, r, want)
		}
	}
}

// TestNextCallReadsTheLastFailure: a reply does not wait for its audit
// row (SPEC 5), yet an agent that reads query_errors in its very next call
// finds the call that just failed: the server's next call waits for the
// rows queued before it. Over stdio, and for an agent over HTTP reading
// another's failure.
func TestNextCallReadsTheLastFailure(t *testing.T) {
	t.Parallel()
	check := func(t *testing.T, failing, reading *session) {
		for i := range 20 {
			table := fmt.Sprintf("missing_%d", i)
			failing.fails("read_query", q("SELECT * FROM "+table), "SQL_ERROR")
			got := reading.ok("read_query", q("SELECT query FROM query_errors LIMIT 1"))
			if !strings.Contains(got, table) {
				t.Fatalf("call %d: the newest failure read right after it is %q, want the query on %s", i, got, table)
			}
		}
	}
	t.Run("stdio", func(t *testing.T) {
		t.Parallel()
		s := start(t, newDB(t))
		check(t, s, s)
	})
	t.Run("http", func(t *testing.T) {
		t.Parallel()
		h := startHTTP(t, newDB(t), []string{"alice", "bob"})
		check(t, h.connect(t, "alice", true), h.connect(t, "bob", false))
	})
}

// TestAuditKeepsABoundedPrefix: a huge query is audited as a bounded
// prefix with its length and sha256 in detail, and does not grow the file
// by its size; a query too large for a worker is refused before one runs,
// and audited bounded too.
func TestAuditKeepsABoundedPrefix(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	// The worker's memory budget is far above what a 1 MiB statement needs
	// (the default 256 MiB met RESOURCE_LIMIT under load: with GC paced
	// by a soft limit, a starved worker's heap overshoots), so that the
	// test checks the audit bound, not the machine's load.
	s := start(t, db, "--audit-query-bytes", "4096", "--worker-memory-mb", "1024")
	size := func() int64 {
		var n int64
		for _, suffix := range []string{"", "-wal"} {
			if fi, err := os.Stat(db + suffix); err == nil {
				n += fi.Size()
			}
		}
		return n
	}
	s.ok("read_query", q("SELECT 0"))
	base := size()
	huge := "SELECT 1 AS one /* " + strings.Repeat("é", 512<<10) + " */" // 1 MiB
	for range 3 {
		if got := s.ok("read_query", q(huge)); got != "one\n1\n# 1 rows" {
			t.Fatalf("huge query: %q", bounded(got))
		}
	}
	text := s.fails("read_query", q("SELECT '"+strings.Repeat("x", 12<<20)+"'"), "INVALID_ARGUMENT")
	if !strings.Contains(text, "nothing was run") {
		t.Fatalf("too large: %q", bounded(text))
	}
	if !waitFor(10*time.Second, func() bool { return len(auditLog(t, db)) == 5 }) {
		t.Fatalf("%d audit rows", len(auditLog(t, db)))
	}
	sum := sha256.Sum256([]byte(huge))
	for _, r := range auditLog(t, db)[1:4] {
		var d map[string]any
		if err := json.Unmarshal([]byte(r.detail), &d); err != nil {
			t.Fatal(err)
		}
		if len(r.query) > 4096 || !strings.HasPrefix(huge, r.query) || len(r.query) < 4000 {
			t.Fatalf("query kept %d bytes, want a prefix of at most 4096", len(r.query))
		}
		if d["query_bytes"] != float64(len(huge)) || d["query_sha256"] != hex.EncodeToString(sum[:]) {
			t.Fatalf("detail %v: want the full length and sha256", d)
		}
	}
	if r := auditLog(t, db)[4]; len(r.query) > 4096 || !strings.HasPrefix(r.errText, "INVALID_ARGUMENT") {
		t.Fatalf("refused query audited as %d bytes: %q", len(r.query), bounded(r.errText))
	}
	// 15 MB of queries went through; the file grew by the bounded rows.
	if grown := size() - base; grown > 1<<20 {
		t.Fatalf("database and WAL grew by %d bytes", grown)
	}
}

// bigDB makes a database of about 120 MB whose snapshot takes a while.
func bigDB(t *testing.T) string {
	t.Helper()
	db := newDB(t)
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE t(id INTEGER PRIMARY KEY, b BLOB)"))
	s.c.Close()
	direct := openDirect(t, db)
	// zeroblob: 120 MB of pages to copy is what counts; randomblob cost
	// 2 s of the test's own CPU (more under Wine).
	if _, err := direct.Exec(`INSERT INTO t(b) SELECT zeroblob(100000)
		FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 1200) SELECT x FROM s)`); err != nil {
		t.Fatal(err)
	}
	direct.Close()
	return db
}

func snapshotFiles(t *testing.T, db string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(filepath.Dir(db), "memory.snapshots"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

func rowCount(t *testing.T, db string) int {
	t.Helper()
	var n int
	if err := openDirect(t, db).QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestSnapshotHoldsACommitDuringTheCopy: another process commits a row
// while destructive_query copies the database, and the DELETE then removes
// it. The snapshot is copied again under the write lock, so it holds
// exactly what the statement started from: the row survives in it.
func TestSnapshotHoldsACommitDuringTheCopy(t *testing.T) {
	t.Parallel()
	db := bigDB(t)
	// A full copy: auto would make an undo record of this 120 MB database.
	s := start(t, db, "--query-timeout", "30", "--snapshot-mode", "full")
	// On a loaded machine the INSERT may come too late, after the copy and
	// the statement: then the DELETE finds no row and says nothing about
	// the snapshot, and the test tries again with another row.
	for attempt := 1; attempt <= 3; attempt++ {
		id := -attempt
		del := fmt.Sprintf("DELETE FROM t WHERE id = %d", id)
		done := make(chan string, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "destructive_query"
			req.Params.Arguments = map[string]any{"query": del, "reason": "drop the placeholder row"}
			res, err := s.c.CallTool(context.Background(), req)
			var text strings.Builder
			if err != nil {
				text.WriteString("call failed: " + err.Error())
			} else {
				for _, c := range res.Content {
					if tc, ok := c.(mcp.TextContent); ok {
						text.WriteString(tc.Text)
					}
				}
			}
			done <- text.String()
		}()
		// The copy has begun (its read transaction too) once the partial
		// file holds its first 4 MiB step; 120 MB remain to copy.
		if !waitFor(20*time.Second, func() bool {
			for _, f := range snapshotFiles(t, db) {
				if info, err := os.Stat(filepath.Join(filepath.Dir(db), "memory.snapshots", f)); err == nil && strings.HasSuffix(f, ".partial") && info.Size() >= 4<<20 {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no snapshot being copied: %v", snapshotFiles(t, db))
		}
		if _, err := openDirect(t, db).Exec("INSERT INTO t(id, b) VALUES (?, x'00')", id); err != nil {
			t.Fatal(err)
		}
		text := <-done
		if strings.HasPrefix(text, "ok: 0 rows affected; snapshot: ") {
			t.Logf("attempt %d: the INSERT came after the statement", attempt)
			continue
		}
		path, ok := strings.CutPrefix(text, "ok: 1 rows affected; snapshot: ")
		if !ok {
			t.Fatalf("got %q; want the row committed during the copy deleted", text)
		}
		// One snapshot per attempt: the first copy of this one is gone.
		if files := snapshotFiles(t, db); len(files) != attempt || !slices.Contains(files, filepath.Base(path)) {
			t.Fatalf("snapshot folder: %v; want %d snapshots, %s among them", files, attempt, filepath.Base(path))
		}
		var n int
		if err := openDirect(t, path).QueryRow("SELECT count(*) FROM t WHERE id = ?", id).Scan(&n); err != nil || n != 1 {
			t.Fatalf("the snapshot holds %d rows committed during the copy (%v); want 1", n, err)
		}
		var detail map[string]any
		if !waitFor(10*time.Second, func() bool {
			for _, r := range auditLog(t, db) {
				if r.tool == "destructive_query" && r.query == del {
					return json.Unmarshal([]byte(r.detail), &detail) == nil
				}
			}
			return false
		}) || detail["snapshot_copied_again"] != true {
			t.Fatalf("audit detail %v; want snapshot_copied_again", detail)
		}
		return
	}
	t.Fatal("in 3 attempts the INSERT never landed during the copy")
}

// TestStoppedSnapshotLeavesNothing: a destructive_query whose snapshot is
// stopped, by its own time budget or by a cancellation that kills the
// worker mid-copy, leaves no partial snapshot and changes nothing.
func TestStoppedSnapshotLeavesNothing(t *testing.T) {
	t.Parallel()
	db := bigDB(t)
	del := map[string]any{"query": "DELETE FROM t WHERE id < 10", "reason": "test"}
	// destructive_query's subtests need a full copy (auto would make an
	// undo record of this 120 MB database).

	t.Run("snapshot budget", func(t *testing.T) {
		s := start(t, db, "--snapshot-timeout", "0.1", "--query-timeout", "30", "--snapshot-mode", "full")
		text := s.fails("destructive_query", del, "TIMEOUT")
		if !strings.Contains(text, "snapshot was not complete") {
			t.Fatalf("got %q", text)
		}
		if files := snapshotFiles(t, db); len(files) != 0 {
			t.Fatalf("snapshot folder: %v", files)
		}
		if n := rowCount(t, db); n != 1200 {
			t.Fatalf("%d rows: the statement ran", n)
		}
		s.c.Close()
	})

	t.Run("cancelled mid-copy", func(t *testing.T) {
		s := start(t, db, "--standby-workers", "0", "--query-timeout", "30", "--snapshot-mode", "full")
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "destructive_query"
			req.Params.Arguments = del
			_, err := s.c.CallTool(ctx, req)
			errc <- err
		}()
		if !waitFor(20*time.Second, func() bool {
			for _, f := range snapshotFiles(t, db) {
				if strings.HasSuffix(f, ".partial") {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no partial snapshot seen: %v", snapshotFiles(t, db))
		}
		cancel()
		<-errc
		row := waitAudit(t, db, "CANCELLED")
		if row.tool != "destructive_query" {
			t.Fatalf("audit %+v", row)
		}
		if !waitFor(2*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
			t.Fatal("worker alive after the cancellation")
		}
		if files := snapshotFiles(t, db); len(files) != 0 {
			t.Fatalf("snapshot folder after the cancellation: %v", files)
		}
		if n := rowCount(t, db); n != 1200 {
			t.Fatalf("%d rows: the statement ran", n)
		}
	})

	// The snapshot tool's copy is stopped the same ways: over its budget
	// it is skipped (reported, not raised); cancelled, it gets no answer.
	t.Run("snapshot tool over its budget", func(t *testing.T) {
		s := start(t, db, "--snapshot-timeout", "0.1", "--query-timeout", "30")
		if got := s.ok("snapshot", map[string]any{"reason": "budget"}); got != "ok: snapshot skipped (disabled or target unavailable)" {
			t.Fatalf("got %q", got)
		}
		if files := snapshotFiles(t, db); len(files) != 0 {
			t.Fatalf("snapshot folder: %v", files)
		}
		if _, detail := lastSnapshotAudit(t, s, "budget"); !strings.Contains(fmt.Sprint(detail["skipped"]), "TIMEOUT: the snapshot was not complete") {
			t.Fatalf("audit detail %v", detail)
		}
		s.c.Close()
	})
	t.Run("snapshot tool cancelled mid-copy", func(t *testing.T) {
		s := start(t, db, "--standby-workers", "0", "--query-timeout", "30")
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() {
			req := mcp.CallToolRequest{}
			req.Params.Name = "snapshot"
			req.Params.Arguments = map[string]any{"reason": "cancel me"}
			_, err := s.c.CallTool(ctx, req)
			errc <- err
		}()
		if !waitFor(20*time.Second, func() bool {
			for _, f := range snapshotFiles(t, db) {
				if strings.HasSuffix(f, ".partial") {
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no partial snapshot seen: %v", snapshotFiles(t, db))
		}
		cancel()
		<-errc
		var row auditRow
		if !waitFor(10*time.Second, func() bool {
			for _, r := range auditLog(t, db) {
				if r.tool == "snapshot" && strings.HasPrefix(r.errText, "CANCELLED") {
					row = r
					return true
				}
			}
			return false
		}) {
			t.Fatalf("no CANCELLED snapshot row: %+v", auditLog(t, db))
		}
		if row.query != "cancel me" {
			t.Fatalf("audit %+v", row)
		}
		if !waitFor(2*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
			t.Fatal("worker alive after the cancellation")
		}
		if files := snapshotFiles(t, db); len(files) != 0 {
			t.Fatalf("snapshot folder after the cancellation: %v", files)
		}
	})
}

// TestSnapshotLeftoversAndRetention: what a crash left in the snapshot
// folder is removed when a server starts while no other server holds the
// database (and only then), and retention counts complete snapshots only.
func TestSnapshotLeftoversAndRetention(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	a := start(t, db, "--snapshots", "2")
	a.ok("write_query", q("CREATE TABLE t(x)"))
	a.ok("write_query", q("INSERT INTO t VALUES (1), (2), (3)"))
	dir := filepath.Join(filepath.Dir(db), "memory.snapshots")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	leftovers := []string{"memory.0123456789abcdef.partial", "memory.20200101T000000.000Z.db", "memory.20200101T000000.000Z.db-journal"}
	complete := []string{"memory.20210101T000000.000Z.db", "memory.20210102T000000.000Z.db"}
	for _, n := range append(slices.Clone(leftovers), complete...) {
		if err := os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Server a holds the database: a second server must not touch what
	// may be a running snapshot.
	b := start(t, db, "--snapshots", "2")
	b.ok("read_query", q("SELECT 1"))
	if files := snapshotFiles(t, db); len(files) != 5 {
		t.Fatalf("files removed while another server held the database: %v", files)
	}
	a.c.Close()
	b.c.Close()
	// Both gone: the next start removes the leftovers.
	if !waitFor(10*time.Second, func() bool { return serverOf(serverBin, db) == 0 }) {
		t.Fatal("servers did not exit")
	}
	c := start(t, db, "--snapshots", "2")
	if files := snapshotFiles(t, db); !slices.Equal(files, complete) {
		t.Fatalf("after a start with no other server: %v, want %v", files, complete)
	}
	text := c.ok("destructive_query", map[string]any{"query": "DELETE FROM t WHERE x = 1", "reason": "test"})
	newest := filepath.Base(text[strings.Index(text, "snapshot: ")+len("snapshot: "):])
	// Two complete snapshots kept: the newest fake one and the real one.
	if files := snapshotFiles(t, db); !slices.Equal(files, []string{complete[1], newest}) {
		t.Fatalf("after the snapshot: %v", files)
	}
	var n int
	snap, err := sql.Open("sqlite", "file:"+filepath.Join(dir, newest)+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer snap.Close()
	if err := snap.QueryRow("SELECT count(*) FROM t").Scan(&n); err != nil || n != 3 {
		t.Fatalf("snapshot holds %d rows (%v), want the 3 before the delete", n, err)
	}
}
