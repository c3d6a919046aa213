package tests

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

// sessionStatus sends one raw request of agent to /mcp and returns its
// status without waiting for the body (a stream's would not end).
func (h *httpServer) sessionStatus(t *testing.T, agent, method, session, body string) int {
	t.Helper()
	req, err := http.NewRequest(method, "http://"+h.addr+"/mcp", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+h.token[agent])
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	c := &http.Client{Timeout: 20 * time.Second}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", agent, method, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestHTTPStreamBelongsToAgent (SPEC 11.1): bob's requests naming
// alice's session are answered 404 whatever their method, and a stream
// bob opens on it hears nothing of alice's call: her progress reaches
// her alone, and her session goes on.
func TestHTTPStreamBelongsToAgent(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--query-timeout", "3")
	alice := h.connect(t, "alice", false)
	id := alice.c.GetSessionId()
	if id == "" {
		t.Fatal("alice has no session id")
	}
	ping := `{"jsonrpc":"2.0","id":7,"method":"ping"}`
	for _, method := range []string{"POST", "DELETE"} {
		if got := h.sessionStatus(t, "bob", method, id, ping); got != 404 {
			t.Errorf("bob's %s on alice's session: %d, want 404", method, got)
		}
	}

	// Bob listens on alice's session while she makes a call with
	// progress.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	var heard bytes.Buffer
	var mu sync.Mutex
	listening := make(chan int, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.addr+"/mcp", nil)
		req.Header.Set("Authorization", "Bearer "+h.token["bob"])
		req.Header.Set("Accept", "text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		req.Header.Set("Mcp-Session-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			listening <- 0
			return
		}
		defer resp.Body.Close()
		listening <- resp.StatusCode
		buf := make([]byte, 4096)
		for {
			n, err := resp.Body.Read(buf)
			mu.Lock()
			heard.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	if got := <-listening; got != 404 {
		t.Errorf("bob's GET (a stream) on alice's session: %d, want 404", got)
	}
	var progress int
	var pmu sync.Mutex
	alice.c.OnNotification(func(n mcp.JSONRPCNotification) {
		if n.Method == string(mcp.MethodNotificationProgress) {
			pmu.Lock()
			progress++
			pmu.Unlock()
		}
	})
	req := mcp.CallToolRequest{}
	req.Params.Name = "read_query"
	req.Params.Arguments = q(runaway)
	req.Params.Meta = &mcp.Meta{ProgressToken: "mine"}
	if res, err := alice.c.CallTool(context.Background(), req); err != nil || !res.IsError {
		t.Fatalf("alice's runaway call: %v %+v", err, res)
	}
	stop()
	mu.Lock()
	if strings.Contains(heard.String(), "progress") {
		t.Errorf("bob heard alice's progress: %s", bounded(heard.String()))
	}
	mu.Unlock()
	pmu.Lock()
	if progress < 2 {
		t.Errorf("alice heard %d progress notifications in a 3 s call", progress)
	}
	pmu.Unlock()
	if got := alice.ok("read_query", q("SELECT 1 AS x")); got != "x\n1\n# 1 rows" {
		t.Fatalf("alice after bob's tries: %q", got)
	}
}

// TestHTTPSessionsTakenByInitialize (SPEC 11.1): a GET without a session
// opens none (400); one agent cannot take every session (its share is
// --max-sessions-per-agent), so alice's initialize is served while bob
// holds his; bob's sessions with nothing open end after --session-idle,
// and a session with its stream open does not.
func TestHTTPSessionsTakenByInitialize(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	h := startHTTP(t, db, []string{"alice", "bob"}, "--max-sessions", "4", "--max-sessions-per-agent", "2", "--session-idle", "2")
	for range 5 {
		if got := h.sessionStatus(t, "bob", "GET", "", ""); got != 400 {
			t.Fatalf("GET /mcp without a session: %d, want 400", got)
		}
	}
	initialize := func(agent string) (int, string) {
		status, hdr, _ := h.rawRequest(t, "POST", "/mcp", map[string]string{"Authorization": "Bearer " + h.token[agent]}, initializeBody)
		return status, hdr.Get("Mcp-Session-Id")
	}
	var bobs []string
	for i := range 4 {
		status, id := initialize("bob")
		want := 200
		if i >= 2 {
			want = 429
		}
		if status != want {
			t.Fatalf("bob's initialize %d: %d, want %d", i+1, status, want)
		}
		if id != "" {
			bobs = append(bobs, id)
		}
	}
	a := h.connect(t, "alice", false)
	a.ok("read_query", q("SELECT 1"))

	// Bob's first session keeps a stream open; his second has nothing.
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	req, _ := http.NewRequestWithContext(ctx, "GET", "http://"+h.addr+"/mcp", nil)
	req.Header.Set("Authorization", "Bearer "+h.token["bob"])
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("MCP-Protocol-Version", "2025-11-25")
	req.Header.Set("Mcp-Session-Id", bobs[0])
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("bob's stream on his session: %v %v", resp, err)
	}
	defer resp.Body.Close()
	go func() { _, _ = io.Copy(io.Discard, resp.Body) }()
	// Bob is at his share: his next initialize is served once the quiet
	// session has ended (asking touches neither session).
	if !waitFor(20*time.Second, func() bool { status, _ := initialize("bob"); return status == 200 }) {
		t.Fatal("bob's quiet session did not end within 20 s (--session-idle 2)")
	}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	if got := h.sessionStatus(t, "bob", "POST", bobs[1], ping); got != 404 {
		t.Fatalf("bob's quiet session: %d, want 404 (ended)", got)
	}
	if got := h.sessionStatus(t, "bob", "POST", bobs[0], ping); got != 200 {
		t.Fatalf("bob's session with an open stream ended: %d", got)
	}
}
