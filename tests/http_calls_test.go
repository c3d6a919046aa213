package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPCancelKillsWorker: a client that gives up on a call (its
// context cancelled) stops the call's worker at once, over HTTP too, and
// the call is audited as CANCELLED under the agent.
func TestHTTPCancelKillsWorker(t *testing.T) {
	t.Parallel()
	generations(t, func(t *testing.T, modern bool) {
		db := newDB(t)
		h := startHTTP(t, db, []string{"alice"}, "--query-timeout", "30", "--standby-workers", "0")
		s := h.connect(t, "alice", modern)
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
		time.Sleep(200 * time.Millisecond)
		cancel()
		if err := <-errc; !errors.Is(err, context.Canceled) {
			t.Fatalf("CallTool: %v", err)
		}
		// A liveness bound well inside --query-timeout 30: only the
		// cancellation can have ended the worker by then.
		if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
			t.Fatalf("worker %d still alive 10 s after the cancellation", pid)
		}
		row := waitAudit(t, db, "CANCELLED: ")
		if row.tool != "read_query" || row.errText != "CANCELLED: cancelled by the client" || !strings.Contains(row.detail, `"agent": "alice"`) {
			t.Fatalf("audit row %+v", row)
		}
		if got := s.ok("read_query", q("SELECT 41 + 1 AS x")); got != "x\n42\n# 1 rows" {
			t.Fatalf("after the cancellation: %q", got)
		}
	})
}

// TestHTTPProgress: a long call with a progress token hears about once a
// second over the call's SSE stream.
func TestHTTPProgress(t *testing.T) {
	t.Parallel()
	generations(t, func(t *testing.T, modern bool) {
		db := newDB(t)
		h := startHTTP(t, db, []string{"alice"}, "--query-timeout", "3")
		s := h.connect(t, "alice", modern)
		var mu sync.Mutex
		var got []map[string]any
		s.c.OnNotification(func(n mcp.JSONRPCNotification) {
			if n.Method == string(mcp.MethodNotificationProgress) {
				mu.Lock()
				got = append(got, n.Params.AdditionalFields)
				mu.Unlock()
			}
		})
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_query"
		req.Params.Arguments = q(runaway)
		req.Params.Meta = &mcp.Meta{ProgressToken: "slow"}
		res, err := s.c.CallTool(context.Background(), req)
		if err != nil || !res.IsError {
			t.Fatalf("runaway call: %v %+v", err, res)
		}
		mu.Lock()
		defer mu.Unlock()
		if len(got) < 2 {
			t.Fatalf("%d progress notifications during a 3 s call: %v", len(got), got)
		}
		for _, n := range got {
			msg, _ := n["message"].(string)
			p, _ := n["progress"].(float64)
			total, _ := n["total"].(float64)
			if n["progressToken"] != "slow" || !progressTotalOK(p, total, 3) || !strings.HasPrefix(msg, "read_query running for ") {
				t.Fatalf("notification %v", n)
			}
		}
	})
}

// TestHTTPConfirm: destructive_query asks the person over HTTP
// (elicitation/create on the call's SSE stream for 2025-11-25, the
// input_required round trip for 2026-07-28); yes runs it, no changes
// nothing.
func TestHTTPConfirm(t *testing.T) {
	t.Parallel()
	generations(t, func(t *testing.T, modern bool) {
		for _, c := range []struct {
			name   string
			action mcp.ElicitationResponseAction
			allow  bool
		}{{"accept", mcp.ElicitationResponseActionAccept, true}, {"decline", mcp.ElicitationResponseActionDecline, false}} {
			t.Run(c.name, func(t *testing.T) {
				db := newDB(t)
				h := startHTTP(t, db, []string{"alice"})
				a := answering(c.action, map[string]any{"allow": c.allow})
				s := h.connect(t, "alice", modern, client.WithElicitationHandler(a))
				setupShop(t, s)
				before := dump(t, db, shopTables...)
				text, isErr := s.call("destructive_query", deleteTestOrders)
				if q := a.asked(); len(q) != 1 || !strings.Contains(q[0].Message, "DELETE 2 rows from") {
					t.Fatalf("questions: %+v", q)
				}
				if c.allow {
					if isErr || !strings.HasPrefix(text, "ok: 2 rows affected; snapshot: ") {
						t.Fatalf("allowed: %q", text)
					}
				} else {
					if !isErr || !strings.HasPrefix(text, "DECLINED: ") || dump(t, db, shopTables...) != before {
						t.Fatalf("declined: (error=%v) %q", isErr, text)
					}
				}
				d := confirmDetail(t, s, "destructive_query")
				if want := map[bool]string{true: "accept", false: "decline"}[c.allow]; d["answer"] != want {
					t.Fatalf("audit detail %v, want answer %s", d, want)
				}
			})
		}
	})
}

// canonicalHash is the reference's hash of an ASCII event (SPEC 5.1):
// json.Marshal's output is the canonical form for text without <, >, &.
func canonicalHash(id int64, ts, session, kind, content, prev string) string {
	b, _ := json.Marshal([]any{id, ts, session, kind, content, prev})
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// checkChainByHand recomputes every hash of the file the way the
// reference does and returns the events' sessions by id.
func checkChainByHand(t *testing.T, db string) map[int64]string {
	t.Helper()
	d := openDirect(t, db)
	rows, err := d.Query(`SELECT id, ts, session, kind, content, prev_hash, hash FROM memory_events ORDER BY id`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	sessions := map[int64]string{}
	prev := strings.Repeat("0", 64)
	var want int64 = 1
	for rows.Next() {
		var id int64
		var ts, session, kind, content, ph, hash string
		if err := rows.Scan(&id, &ts, &session, &kind, &content, &ph, &hash); err != nil {
			t.Fatal(err)
		}
		// json.Marshal is the canonical form only for ASCII without <, >
		// and &: other rows (some of the reference's own) are left to
		// verify_chain, their links still checked here.
		plain := !strings.ContainsFunc(session+kind+content, func(r rune) bool { return r > 0x7e || r == '<' || r == '>' || r == '&' })
		if id != want || ph != prev || plain && canonicalHash(id, ts, session, kind, content, ph) != hash {
			t.Fatalf("event %d does not verify by hand (session %q)", id, session)
		}
		sessions[id], prev, want = session, hash, want+1
	}
	return sessions
}

// TestHTTPAgentsShareOneChain: on the reference's own file, two agents
// over HTTP (one per protocol generation), a stdio server and a
// reference-style writer append at once; every event is in one chain
// that verifies (by the server and by hand, as the reference does) and
// names its agent; the audit rows too; the resume context shows who
// wrote each event.
func TestHTTPAgentsShareOneChain(t *testing.T) {
	t.Parallel()
	db := referenceDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"})
	alice := h.connect(t, "alice", true)
	bob := h.connect(t, "bob", false)
	local := start(t, db)
	const each = 6
	var wg sync.WaitGroup
	for name, s := range map[string]*session{"alice": alice, "bob": bob, "stdio": local} {
		wg.Go(func() {
			for i := range each {
				s.ok("append_event", map[string]any{"content": fmt.Sprintf("%s event %d", name, i)})
			}
		})
	}
	referenceAppend(t, db, "2026-12-02T00:00:00Z", "note", "reference event")
	wg.Wait()
	sessions := checkChainByHand(t, db)
	if len(sessions) != 8+3*each+1 {
		t.Fatalf("%d events, want %d", len(sessions), 8+3*each+1)
	}
	count := map[string]int{}
	for _, s := range sessions {
		switch {
		case strings.HasSuffix(s, "@alice"):
			count["alice"]++
		case strings.HasSuffix(s, "@bob"):
			count["bob"]++
		}
	}
	if count["alice"] != each || count["bob"] != each {
		t.Fatalf("events by agent: %v", count)
	}
	if v := alice.verify(); !v.OK || v.Events != len(sessions) {
		t.Fatalf("verify_chain: %+v", v)
	}
	// The reference grows the chain on after the agents.
	referenceAppend(t, db, "2026-12-02T00:00:01Z", "note", "reference again")
	if v := bob.verify(); !v.OK || v.Events != len(sessions)+1 {
		t.Fatalf("verify_chain after a reference append: %+v", v)
	}
	text := bob.ok("get_resume_context", map[string]any{"max_events": 100})
	for _, want := range []string{"id,ts,kind,content,agent\n", ",note,alice event 0,alice\n", ",note,bob event 0,bob\n", `,note,stdio event 0,""` + "\n"} {
		if !strings.Contains(text, want) {
			t.Fatalf("resume context lacks %q:\n%s", want, text)
		}
	}
	d := openDirect(t, db)
	for agent, s := range map[string]*session{"alice": alice, "bob": bob} {
		// Rows are written after the replies: wait for each agent's.
		var n int
		var err error
		if !waitFor(10*time.Second, func() bool {
			err = d.QueryRow(`SELECT count(*) FROM query_log WHERE session LIKE '%@' || ? AND json_extract(detail, '$.agent') = ?`, agent, agent).Scan(&n)
			return err == nil && int64(n) >= s.calls.Load()
		}) || int64(n) != s.calls.Load() {
			t.Fatalf("%d audit rows of %s, %d calls (%v)", n, agent, s.calls.Load(), err)
		}
	}
}

// TestHTTPCallsPerAgent: an agent with --max-calls-per-agent calls in
// flight has one more wait in line, progress token or not, and the next
// one refused with RESOURCE_LIMIT naming both bounds; another agent is
// served meanwhile; a queued call with a progress token hears that it
// waits.
func TestHTTPCallsPerAgent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--max-calls-per-agent", "1", "--max-queued-per-agent", "1", "--query-timeout", "4", "--standby-workers", "0")
	alice := h.connect(t, "alice", true)
	bob := h.connect(t, "bob", true)
	done := make(chan struct{})
	go func() {
		defer close(done)
		alice.call("read_query", q(runaway)) // holds alice's one place for 4 s
	}()
	waitWorker(t, db)
	// Two more: one waits in line (no progress token), the other finds the
	// line full. Which is which depends on their arrival.
	type answer struct {
		text  string
		isErr bool
	}
	answers := make(chan answer, 2)
	for i := range 2 {
		go func() {
			text, isErr := alice.call("read_query", q(fmt.Sprintf("SELECT %d AS x", i)))
			answers <- answer{text, isErr}
		}()
	}
	first := <-answers
	if !first.isErr || !strings.HasPrefix(first.text, "RESOURCE_LIMIT: ") || !strings.Contains(first.text, "--max-calls-per-agent 1, --max-queued-per-agent 1") || !strings.Contains(first.text, "wait for answers before sending more") {
		t.Fatalf("the call beyond the line: %+v", first)
	}
	if got := bob.ok("read_query", q("SELECT 2 AS x")); got != "x\n2\n# 1 rows" {
		t.Fatalf("bob meanwhile: %q", got)
	}
	<-done
	if second := <-answers; second.isErr || !strings.HasPrefix(second.text, "x\n") {
		t.Fatalf("the call that waited in line: %+v", second)
	}
	// With a progress token the call hears that it waits in line.
	var mu sync.Mutex
	var msgs []string
	alice.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if m, ok := n.Params.AdditionalFields["message"].(string); ok {
			mu.Lock()
			msgs = append(msgs, m)
			mu.Unlock()
		}
	})
	// The first runaway's answer can come before its killed worker is
	// gone (and bob's worker may still be exiting): waitWorker would find
	// one of those, and the queued call below would find alice's place
	// free. So no worker first, then the second runaway's.
	if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatalf("workers still running: %v", workersOf(db))
	}
	go alice.call("read_query", q(runaway))
	waitWorker(t, db)
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_query"
	req.Params.Arguments = q("SELECT 3 AS x")
	req.Params.Meta = &mcp.Meta{ProgressToken: "queued"}
	res, err := alice.c.CallTool(context.Background(), req)
	if err != nil || res.IsError {
		t.Fatalf("queued call: %v %+v", err, res)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(msgs) == 0 || !strings.Contains(msgs[0], "waiting in line for one of this agent's calls") {
		t.Fatalf("progress while queued: %q", msgs)
	}
}

// TestHTTPSigtermDrains: SIGTERM lets a call in flight finish (its answer
// arrives), refuses new connections, writes the audit and exits.
func TestHTTPSigtermDrains(t *testing.T) {
	t.Parallel()
	if runtime.GOOS == "windows" {
		t.Skip("Windows has no SIGTERM; a service manager stops the process, which loses only the calls in flight")
	}
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"}, "--shutdown-grace", "20", "--standby-workers", "0")
	s := h.connect(t, "alice", false)
	s.ok("write_query", q("CREATE TABLE t(x)"))
	// The worker seen below must be the slow call's: on a loaded machine
	// the last call's may still be exiting.
	mustWaitFor(t, "the last call's worker to exit", func() bool { return len(workersOf(db)) == 0 })
	// A call of about a second: a recursive count, finite.
	const slow = "WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 400000) SELECT count(*) AS n FROM c"
	res := make(chan string, 1)
	go func() { res <- s.ok("read_query", q(slow)) }()
	waitWorker(t, db)
	if err := h.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case got := <-res:
		if got != "n\n400000\n# 1 rows" {
			t.Fatalf("the call in flight answered %q", got)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("the call in flight got no answer after SIGTERM")
	}
	select {
	case <-h.done:
	case <-time.After(30 * time.Second):
		t.Fatalf("the server did not exit after SIGTERM:\n%s", h.log.String())
	}
	if code := h.cmd.ProcessState.ExitCode(); code != 0 {
		t.Fatalf("exit %d after SIGTERM:\n%s", code, h.log.String())
	}
	var n int
	if err := openDirect(t, db).QueryRow(`SELECT count(*) FROM query_log WHERE tool = 'read_query' AND ok = 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("audit rows of the drained call: %d %v", n, err)
	}
}

// TestHTTPServerKilledDuringAppends: kill -9 of the HTTP server while 8
// agents append; after a restart every acknowledged event is there once,
// and the chain verifies.
func TestHTTPServerKilledDuringAppends(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	agents := []string{"a0", "a1", "a2", "a3", "a4", "a5", "a6", "a7"}
	h := startHTTP(t, db, agents, "--max-workers", "8")
	var mu sync.Mutex
	acked := map[int]string{}
	idRE := regexp.MustCompile(`^ok: event (\d+) appended`)
	var wg sync.WaitGroup
	for i, agent := range agents {
		s := h.connect(t, agent, i%2 == 0)
		wg.Go(func() {
			for n := 0; ; n++ {
				content := fmt.Sprintf("%s event %d", agent, n)
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				req := mcp.CallToolRequest{}
				req.Params.Name = "append_event"
				req.Params.Arguments = map[string]any{"content": content}
				res, err := s.c.CallTool(ctx, req)
				cancel()
				if err != nil || res.IsError {
					return
				}
				tc, _ := mcp.AsTextContent(res.Content[0])
				m := idRE.FindStringSubmatch(tc.Text)
				if m == nil {
					t.Errorf("append answer %q", tc.Text)
					return
				}
				id, _ := strconv.Atoi(m[1])
				mu.Lock()
				acked[id] = content
				mu.Unlock()
			}
		})
	}
	if !waitFor(20*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(acked) >= 40 }) {
		t.Fatal("the agents' appends were not acknowledged")
	}
	if err := h.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-h.done
	wg.Wait()
	h.start()
	s := h.connect(t, "a0", false)
	if v := s.verify(); !v.OK || v.Events < len(acked) {
		t.Fatalf("after the kill: %+v, %d acknowledged", v, len(acked))
	}
	sessions := checkChainByHand(t, db)
	d := openDirect(t, db)
	checkIntegrity(t, d)
	for id, content := range acked {
		var got string
		var n int
		if err := d.QueryRow(`SELECT content, (SELECT count(*) FROM memory_events WHERE content = ?) FROM memory_events WHERE id = ?`, content, id).Scan(&got, &n); err != nil || got != content || n != 1 {
			t.Errorf("acknowledged event %d: %q (%d times), %v; want %q once", id, got, n, err, content)
		}
		agent, _, _ := strings.Cut(content, " ")
		if !strings.HasSuffix(sessions[int64(id)], "@"+agent) {
			t.Errorf("event %d session %q does not name %s", id, sessions[int64(id)], agent)
		}
	}
	t.Logf("%d acknowledged events, %d in the chain", len(acked), len(sessions))
}

// TestHTTPBulkText: a large result (the bulk-text fast path, encoded once
// and written in place of mcp-go's placeholder) reads the same over HTTP,
// in both generations, as over stdio.
func TestHTTPBulkText(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	caps := []string{"--max-result-bytes", "4000000", "--max-cell-chars", "1000000"}
	local := start(t, db, caps...)
	local.ok("write_query", q("CREATE TABLE big(id INTEGER PRIMARY KEY, body TEXT)"))
	local.ok("write_query", q(`INSERT INTO big(body) WITH RECURSIVE c(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM c WHERE n < 40)
		SELECT printf('%d: <tag> & "quotes" é ü `+"\u2028"+` tab	%s', n, hex(randomblob(2000))) FROM c`))
	const sql = "SELECT id, body FROM big ORDER BY id"
	want := local.ok("read_query", q(sql))
	if len(want) < 128<<10 {
		t.Fatalf("result of %d bytes is too small for the bulk path", len(want))
	}
	h := startHTTP(t, db, []string{"alice"}, caps...)
	for _, modern := range []bool{false, true} {
		s := h.connect(t, "alice", modern)
		if got := s.ok("read_query", q(sql)); got != want {
			t.Fatalf("modern=%v: %d bytes over HTTP differ from %d over stdio", modern, len(got), len(want))
		}
	}
}

// TestHTTPCancelledNotification: notifications/cancelled posted on a
// 2025-11-25 session, while the call's own POST waits, kills the call's
// worker; the POST ends with the CANCELLED error (an HTTP request needs an
// end; a client that cancelled ignores it).
func TestHTTPCancelledNotification(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"}, "--query-timeout", "30", "--standby-workers", "0")
	auth := map[string]string{"Authorization": "Bearer " + h.token["alice"]}
	status, hdr, body := h.rawRequest(t, "POST", "/mcp", auth, initializeBody)
	id := hdr.Get("Mcp-Session-Id")
	if status != 200 || id == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	sess := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": id, "MCP-Protocol-Version": "2025-11-25"}
	if status, _, body := h.rawRequest(t, "POST", "/mcp", sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("initialized: %d %s", status, body)
	}
	call, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": map[string]any{"name": "read_query", "arguments": q(runaway)}})
	answered := make(chan string, 1)
	go func() {
		_, _, body := h.rawRequest(t, "POST", "/mcp", sess, string(call))
		answered <- body
	}()
	pid := waitWorker(t, db)
	if status, _, body := h.rawRequest(t, "POST", "/mcp", sess, `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":7,"reason":"test"}}`); status != 202 {
		t.Fatalf("cancelled: %d %s", status, body)
	}
	if !waitFor(2*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatalf("worker %d still alive 2 s after notifications/cancelled", pid)
	}
	select {
	case body := <-answered:
		if !strings.Contains(body, "CANCELLED: cancelled by the client") {
			t.Fatalf("the call's POST ended with %q", body)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the call's POST did not end")
	}
	waitAudit(t, db, "CANCELLED: cancelled by the client")
}

// TestHTTPReadonlyProfile: the readonly profile over HTTP: its three JSON
// tools, and nothing can be written; the agent is in the --audit-db rows.
func TestHTTPReadonlyProfile(t *testing.T) {
	t.Parallel()
	db := shopDB(t)
	audit := filepath.Join(filepath.Dir(db), "audit.db")
	h := startHTTP(t, db, []string{"analyst"}, "--profile", "readonly", "--audit-db", audit)
	s := h.connect(t, "analyst", true)
	tools, err := s.c.ListTools(context.Background(), mcp.ListToolsRequest{})
	if err != nil || len(tools.Tools) != 3 {
		t.Fatalf("tools/list: %v %v", tools, err)
	}
	if got := s.ok("query_database", map[string]any{"sql": "SELECT count(*) AS n FROM customers"}); !strings.Contains(got, `"returnedRows":1`) {
		t.Fatalf("query_database: %s", got)
	}
	if text, isErr := s.call("query_database", map[string]any{"sql": "DELETE FROM customers"}); !isErr || !strings.Contains(text, "READ_ONLY_VIOLATION") {
		t.Fatalf("a DELETE over the readonly profile: %v %s", isErr, text)
	}
	if !waitFor(10*time.Second, func() bool {
		var n int
		_ = openDirect(t, audit).QueryRow(`SELECT count(*) FROM query_log WHERE session LIKE '%@analyst'`).Scan(&n)
		return int64(n) == s.calls.Load()
	}) {
		t.Fatalf("the audit rows of the readonly profile do not name the agent")
	}
}
