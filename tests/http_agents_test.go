package tests

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"
)

// TestHTTPTokenFileSymlink: a symbolic link in place of --auth-tokens is
// refused, even to a private file: at start (exit 2, saying why) and when
// the file is swapped for one while the server runs (every token fails,
// the log says why).
func TestHTTPTokenFileSymlink(t *testing.T) {
	t.Parallel()
	dir := testDir(t)
	real := filepath.Join(dir, "tokens.real")
	addToken(t, real, "alice")
	link := filepath.Join(dir, "tokens.link")
	if err := os.Symlink(real, link); err != nil {
		t.Skipf("cannot make a symbolic link here: %v", err)
	}
	if why := linkUnseenReason(); why != "" {
		t.Skip(why)
	}
	// A server that accepts the link serves until the bound kills it.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, serverBin, "--db", filepath.Join(dir, "memory.db"), "--http", "127.0.0.1:0", "--auth-tokens", link)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), "is a symbolic link") || !strings.Contains(stderr.String(), "point --auth-tokens at the file itself") {
		t.Fatalf("start with a linked token file: %v\n%s", err, stderr.String())
	}

	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"})
	auth := map[string]string{"Authorization": "Bearer " + h.token["alice"]}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", auth, initializeBody); status != 200 {
		t.Fatalf("initialize before the swap: %d %s", status, body)
	}
	moved := h.tokens + ".real"
	if err := os.Rename(h.tokens, moved); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(moved, h.tokens); err != nil {
		t.Fatal(err)
	}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", auth, initializeBody); status != 401 {
		t.Fatalf("initialize after the file became a link: %d %s", status, body)
	}
	if !waitFor(10*time.Second, func() bool { return strings.Contains(h.log.String(), "is a symbolic link") }) {
		t.Fatalf("the log does not say why every token fails:\n%s", tail(h.log.String(), 3000))
	}
}

// modernHTTPCall sends one raw 2026-07-28 tools/call as agent, with the
// round-trip fields a client library fills only from its own questions,
// and returns the JSON-RPC result (the body may be JSON or one SSE
// stream).
func (h *httpServer) modernHTTPCall(t *testing.T, agent string, id int, tool string, args map[string]any, state string, responses map[string]any) map[string]any {
	t.Helper()
	params := map[string]any{"name": tool, "arguments": args, "_meta": modernMeta}
	if state != "" {
		params["requestState"] = state
	}
	if responses != nil {
		params["inputResponses"] = responses
	}
	b, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "method": "tools/call", "params": params})
	status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", map[string]string{
		"Authorization": "Bearer " + h.token[agent], "MCP-Protocol-Version": mcp.ProtocolVersion20260728,
		mcp.HeaderMethod: "tools/call", mcp.HeaderName: tool,
	}, string(b))
	if status != 200 {
		t.Fatalf("%s's tools/call: %d %s", agent, status, body)
	}
	var msgs []string
	if strings.HasPrefix(strings.TrimSpace(body), "{") {
		msgs = []string{body}
	}
	sc := bufio.NewScanner(strings.NewReader(body))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			msgs = append(msgs, data)
		}
	}
	for _, m := range msgs {
		var msg struct {
			ID     *int           `json:"id"`
			Result map[string]any `json:"result"`
		}
		if json.Unmarshal([]byte(m), &msg) == nil && msg.ID != nil && *msg.ID == id {
			return msg.Result
		}
	}
	t.Fatalf("no result for %s's call %d in %q", agent, id, bounded(body))
	return nil
}

var requestStateField = regexp.MustCompile(`"requestState"\s*:\s*"([^"]+)"`)

// stateSniffer is an HTTP transport that notes the last requestState a
// server handed its client (what an eavesdropper, a log, or a shared
// proxy could learn).
type stateSniffer struct {
	mu    sync.Mutex
	state string
}

func (s *stateSniffer) RoundTrip(r *http.Request) (*http.Response, error) {
	resp, err := http.DefaultTransport.RoundTrip(r)
	if err != nil || r.Method != http.MethodPost {
		return resp, err
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if m := requestStateField.FindSubmatch(b); m != nil {
		s.mu.Lock()
		s.state = string(m[1])
		s.mu.Unlock()
	}
	resp.Body = io.NopCloser(bytes.NewReader(b))
	return resp, err
}

func (s *stateSniffer) last() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.state
}

// replayFirst is alice's person: before answering yes, bob replays the
// requestState alice's client was handed, with a yes of his own.
type replayFirst struct {
	replay func() map[string]any
	bob    map[string]any
}

func (r *replayFirst) Elicit(ctx context.Context, _ mcp.ElicitationRequest) (*mcp.ElicitationResult, error) {
	r.bob = r.replay()
	return &mcp.ElicitationResult{ElicitationResponse: mcp.ElicitationResponse{Action: mcp.ElicitationResponseActionAccept, Content: map[string]any{"allow": true}}}, nil
}

// TestHTTPConfirmBoundToAgent: bob replaying alice's genuine requestState
// (2026-07-28) while her person is being asked neither runs the
// statement nor uses up her question: her own yes then runs it.
func TestHTTPConfirmBoundToAgent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"})
	sniff := &stateSniffer{}
	yes := map[string]any{"confirm": map[string]any{"action": "accept", "content": map[string]any{"allow": true}}}
	asker := &replayFirst{}
	asker.replay = func() map[string]any {
		state := sniff.last()
		if state == "" {
			t.Error("alice's client was handed no requestState")
		}
		return h.modernHTTPCall(t, "bob", 90, "destructive_query", deleteTestOrders, state, yes)
	}
	tr, err := transport.NewStreamableHTTP(h.url, transport.WithHTTPBasicClient(&http.Client{Transport: sniff}),
		transport.WithHTTPHeaders(map[string]string{"Authorization": "Bearer " + h.token["alice"]}))
	if err != nil {
		t.Fatal(err)
	}
	c := client.NewClient(tr, client.WithProtocolVersion(mcp.ProtocolVersion20260728), client.WithDiscoverTimeout(30*time.Second), client.WithElicitationHandler(asker))
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.ProtocolVersion20260728
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e-alice", Version: "1"}
	if _, err := c.Initialize(context.Background(), init); err != nil {
		t.Fatal(err)
	}
	alice := &session{t: t, c: c, db: db, cmd: h.cmd}
	setupShop(t, alice)
	before := dump(t, db, shopTables...)

	text, isErr := alice.call("destructive_query", deleteTestOrders)
	if got := resultText(asker.bob); asker.bob["isError"] != true || !strings.HasPrefix(got, "DECLINED: ") || !strings.Contains(got, "unknown or had expired") {
		t.Fatalf("bob's replay of alice's state: %v", asker.bob)
	}
	if isErr || !strings.HasPrefix(text, "ok: 2 rows affected; snapshot: ") {
		t.Fatalf("alice's own yes after bob's replay: (error=%v) %q", isErr, text)
	}
	if dump(t, db, shopTables...) == before {
		t.Fatal("alice's statement did not run")
	}
	var detail string
	if err := openDirect(t, db).QueryRow(`SELECT detail FROM query_log WHERE session LIKE '%@bob' AND tool = 'destructive_query'`).Scan(&detail); err != nil || !strings.Contains(detail, "another agent's question") {
		t.Fatalf("bob's audit row: %q %v", detail, err)
	}
}

// TestHTTPBurstWaitsInLine: an agent that sends a burst of calls at once
// (appends and reads, no progress token) over a 2025-11-25 session with
// --max-calls-per-agent 2 has every one served: the calls beyond the
// bound wait in line instead of being refused.
func TestHTTPBurstWaitsInLine(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice"}, "--max-calls-per-agent", "2")
	s := h.connect(t, "alice", false)
	const n = 24
	type answer struct {
		i     int
		text  string
		isErr bool
	}
	answers := make(chan answer, n)
	for i := range n {
		go func() {
			var text string
			var isErr bool
			if i%2 == 0 {
				text, isErr = s.call("append_event", map[string]any{"content": fmt.Sprintf("burst %d", i)})
			} else {
				text, isErr = s.call("read_query", q(fmt.Sprintf("SELECT %d AS x", i)))
			}
			answers <- answer{i, text, isErr}
		}()
	}
	for range n {
		a := <-answers
		if a.isErr {
			t.Errorf("call %d of the burst: %s", a.i, a.text)
		}
	}
	if t.Failed() {
		return
	}
	var events int
	if err := openDirect(t, db).QueryRow(`SELECT count(*) FROM memory_events WHERE session LIKE '%@alice'`).Scan(&events); err != nil || events != n/2 {
		t.Fatalf("%d events, want %d (%v)", events, n/2, err)
	}
	if got := s.ok("verify_chain", nil); !strings.Contains(got, `"ok": true`) && !strings.Contains(got, `"ok":true`) {
		t.Fatalf("verify_chain: %s", got)
	}
}

// TestHTTPAgentsTakeTurns: bob may have many calls in flight
// (--max-calls-per-agent 8) on --max-workers 2; he sends 8 slow ones at
// once, so 2 run and 6 wait for a worker. Alice's call, sent after his,
// gets the next free worker: when her answer arrives, no more than bob's
// first 2 calls have ended.
func TestHTTPAgentsTakeTurns(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--max-workers", "2", "--standby-workers", "0", "--max-calls-per-agent", "8", "--query-timeout", "5")
	alice := h.connect(t, "alice", true)
	bob := h.connect(t, "bob", true)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var mu sync.Mutex
	bobDone := 0
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := mcp.CallToolRequest{}
			req.Params.Name = "read_query"
			req.Params.Arguments = q(runaway)
			_, err := bob.c.CallTool(ctx, req)
			if err == nil {
				mu.Lock()
				bobDone++
				mu.Unlock()
			}
		}()
	}
	if !waitFor(20*time.Second, func() bool { return len(workersOf(db)) == 2 }) {
		t.Fatalf("bob's calls do not hold both workers: %v", workersOf(db))
	}
	got := alice.ok("read_query", q("SELECT 'alice' AS who"))
	mu.Lock()
	done := bobDone
	mu.Unlock()
	if got != "who\nalice\n# 1 rows" {
		t.Fatalf("alice: %q", got)
	}
	if done > 2 {
		t.Fatalf("alice was served after %d of bob's calls ended: a freed worker should go to her first", done)
	}
	cancel() // bob gives up the rest
	wg.Wait()
}

// TestHTTPRevocationIsImmediate: `token revoke bob` while bob has calls
// in flight (2025-11-25 with progress, and 2026-07-28) and a GET stream
// open: his workers are killed, the calls are audited as cancelled by
// revocation, the stream ends, and his session is gone even for a new
// token of his; alice goes on.
func TestHTTPRevocationIsImmediate(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--query-timeout", "30", "--standby-workers", "0")
	alice := h.connect(t, "alice", true)
	bob := h.connect(t, "bob", false)

	// Bob's listening stream, on a session of its own (raw: the stream's
	// end is what is tested).
	auth := map[string]string{"Authorization": "Bearer " + h.token["bob"]}
	status, hdr, body := h.rawRequest(t, http.MethodPost, "/mcp", auth, initializeBody)
	sid := hdr.Get("Mcp-Session-Id")
	if status != 200 || sid == "" {
		t.Fatalf("initialize: %d %s", status, body)
	}
	sess := map[string]string{"Authorization": auth["Authorization"], "Mcp-Session-Id": sid, "MCP-Protocol-Version": "2025-11-25"}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", sess, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != 202 {
		t.Fatalf("initialized: %d %s", status, body)
	}
	streamEnded := make(chan error, 1)
	streamOpen := make(chan struct{})
	go func() {
		req, _ := http.NewRequest(http.MethodGet, h.url, nil)
		for k, v := range sess {
			req.Header.Set(k, v)
		}
		req.Header.Set("Accept", "text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			streamEnded <- err
			return
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			streamEnded <- errors.New(resp.Status)
			return
		}
		close(streamOpen)
		_, err = io.Copy(io.Discard, resp.Body)
		streamEnded <- err
	}()
	select {
	case <-streamOpen:
	case err := <-streamEnded:
		t.Fatalf("GET stream: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("GET stream did not open")
	}

	var mu sync.Mutex
	var ticks []time.Time
	bob.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			mu.Lock()
			ticks = append(ticks, time.Now())
			mu.Unlock()
		}
	})
	type answer struct {
		res *mcp.CallToolResult
		err error
		at  time.Time
	}
	answered := make(chan answer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_query"
		req.Params.Arguments = q(runaway)
		req.Params.Meta = &mcp.Meta{ProgressToken: "bob"}
		res, err := bob.c.CallTool(context.Background(), req)
		answered <- answer{res, err, time.Now()}
	}()
	waitWorker(t, db)
	if !waitFor(10*time.Second, func() bool { mu.Lock(); defer mu.Unlock(); return len(ticks) > 0 }) {
		t.Fatal("no progress before the revocation")
	}
	// And a 2026-07-28 call of his (stateless: no session, same end).
	modern := h.connect(t, "bob", true)
	modernAnswered := make(chan answer, 1)
	go func() {
		req := mcp.CallToolRequest{}
		req.Params.Name = "read_query"
		req.Params.Arguments = q(runaway)
		res, err := modern.c.CallTool(context.Background(), req)
		modernAnswered <- answer{res, err, time.Now()}
	}()
	if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) == 2 }) {
		t.Fatalf("bob's two calls do not run: workers %v", workersOf(db))
	}

	if out, err := exec.Command(serverBin, "token", "revoke", "bob", "--auth-tokens", h.tokens).CombinedOutput(); err != nil {
		t.Fatalf("token revoke: %v %s", err, out)
	}
	revoked := time.Now()
	// Liveness bounds well inside --query-timeout 30: only the revocation
	// can end the worker, the call and the stream by then.
	if !waitFor(10*time.Second, func() bool { return len(workersOf(db)) == 0 }) {
		t.Fatalf("bob's workers %v still alive 10 s after his token was revoked", workersOf(db))
	}
	killed := time.Since(revoked)
	var a answer
	for i, ch := range []chan answer{answered, modernAnswered} {
		select {
		case got := <-ch:
			if got.err == nil && (got.res == nil || !got.res.IsError) {
				t.Fatalf("bob's revoked call %d delivered a result: %+v", i, got.res)
			}
			if i == 0 {
				a = got
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("bob's call %d goes on 10 s after his token was revoked", i)
		}
	}
	select {
	case <-streamEnded:
	case <-time.After(10 * time.Second):
		t.Fatal("bob's GET stream is open 10 s after his token was revoked")
	}
	ended := time.Since(revoked)
	mu.Lock()
	for _, tick := range ticks {
		if tick.After(a.at) {
			t.Errorf("a progress notification after the call ended (%s)", tick)
		}
	}
	mu.Unlock()
	t.Logf("after the revocation: worker gone in %s, call and stream ended in %s", killed.Round(time.Millisecond), ended.Round(time.Millisecond))
	if !waitFor(10*time.Second, func() bool {
		n := 0
		for _, r := range auditLog(t, db) {
			if r.errText == "CANCELLED: the agent's token was revoked" && r.tool == "read_query" && strings.Contains(r.detail, `"agent": "bob"`) {
				n++
			}
		}
		return n == 2
	}) {
		t.Fatalf("want 2 audit rows of bob's calls cancelled by revocation: %+v", auditLog(t, db))
	}
	if got := alice.ok("read_query", q("SELECT 'still here' AS x")); got != "x\nstill here\n# 1 rows" {
		t.Fatalf("alice after bob's revocation: %q", got)
	}
	// A new token for bob does not reopen his old session.
	h.token["bob"] = addToken(t, h.tokens, "bob")
	sess["Authorization"] = "Bearer " + h.token["bob"]
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", sess, `{"jsonrpc":"2.0","id":3,"method":"ping"}`); status != 404 {
		t.Fatalf("bob's old session with his new token: %d %s", status, body)
	}
	if status, _, body := h.rawRequest(t, http.MethodPost, "/mcp", map[string]string{"Authorization": sess["Authorization"]}, initializeBody); status != 200 {
		t.Fatalf("bob's new token: %d %s", status, body)
	}
}
