package server

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
)

// sessionRequest is a request of agent to /mcp.
func sessionRequest(agent, method, session, version, body string) *http.Request {
	r := httptest.NewRequest(method, "http://127.0.0.1/mcp", strings.NewReader(body))
	if session != "" {
		r.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		r.Header.Set("MCP-Protocol-Version", version)
	}
	return r.WithContext(WithAgent(r.Context(), agent))
}

// A request that names a session is served only for its agent, whatever
// its method; a GET without a session is refused unless it is
// 2026-07-28's (mcp-go answers those).
func TestSessionsOwned(t *testing.T) {
	tab := &sessionTable{max: 10}
	id := tab.ResolveSessionIdManager(sessionRequest("alice", "POST", "", "", "")).Generate()
	h := tab.owned(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = io.WriteString(w, "served") }))
	for _, c := range []struct {
		name, agent, method, session, version string
		status                                int
	}{
		{"alice POST", "alice", "POST", id, "2025-11-25", 200},
		{"alice GET", "alice", "GET", id, "2025-11-25", 200},
		{"alice DELETE", "alice", "DELETE", id, "2025-11-25", 200},
		{"bob POST", "bob", "POST", id, "2025-11-25", 404},
		{"bob GET", "bob", "GET", id, "2025-11-25", 404},
		{"bob DELETE", "bob", "DELETE", id, "2025-11-25", 404},
		{"bob GET, modern header", "bob", "GET", id, "2026-07-28", 404},
		{"unknown session", "alice", "POST", "feedface", "", 404},
		{"GET without a session", "alice", "GET", "", "2025-11-25", 400},
		{"GET without a session or version", "alice", "GET", "", "", 400},
		{"modern GET without a session", "alice", "GET", "", "2026-07-28", 200},
		{"POST without a session", "bob", "POST", "", "", 200},
	} {
		t.Run(c.name, func(t *testing.T) {
			w := httptest.NewRecorder()
			h.ServeHTTP(w, sessionRequest(c.agent, c.method, c.session, c.version, ""))
			if w.Code != c.status {
				t.Fatalf("%d %q, want %d", w.Code, w.Body.String(), c.status)
			}
		})
	}
}

const initBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{}}`

// Sessions are taken by initializes only, within --max-sessions and the
// agent's share; an initialize that opens none gives its slot back.
func TestSessionsCapped(t *testing.T) {
	tab := &sessionTable{max: 3, perAgent: 2}
	generate := true
	mcpLike := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if generate {
			_, _ = io.WriteString(w, tab.ResolveSessionIdManager(r).Generate())
		}
	})
	h := httpguard.Chain(mcpLike, httpguard.Body(httpguard.BodyLimits{Max: 1 << 10, Timeout: time.Second}), tab.capped)
	initialize := func(agent string) int {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, sessionRequest(agent, "POST", "", "", initBody))
		return w.Code
	}
	generate = false
	for range 3 {
		if got := initialize("alice"); got != 200 {
			t.Fatalf("an initialize that opened no session: %d", got)
		}
	}
	generate = true
	for i, c := range []struct {
		agent  string
		status int
	}{{"alice", 200}, {"alice", 200}, {"alice", 429}, {"bob", 200}, {"carol", 503}, {"bob", 503}} {
		if got := initialize(c.agent); got != c.status {
			t.Fatalf("initialize %d of %s: %d, want %d", i, c.agent, got, c.status)
		}
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, sessionRequest("carol", "POST", "", "", `{"jsonrpc":"2.0","id":1,"method":"ping"}`))
	if w.Code != 200 || tab.count() != 4 {
		t.Fatalf("a ping when the table is full: %d, %d sessions", w.Code, tab.count())
	}
}

// A session with no request in flight ends after --session-idle; one
// with a stream open does not; endAgent ends an agent's sessions and
// cancels its streams.
func TestSessionsSweepAndEndAgent(t *testing.T) {
	var ended []string
	tab := &sessionTable{max: 10, idle: 50 * time.Millisecond, end: func(id string) { ended = append(ended, id) }}
	quiet := tab.ResolveSessionIdManager(sessionRequest("alice", "POST", "", "", "")).Generate()
	listening := tab.ResolveSessionIdManager(sessionRequest("alice", "POST", "", "", "")).Generate()
	bobs := tab.ResolveSessionIdManager(sessionRequest("bob", "POST", "", "", "")).Generate()
	stream, done, ok := tab.enter(context.Background(), listening, "alice")
	if !ok {
		t.Fatal("alice cannot enter her session")
	}
	_, _, _ = tab.enter(context.Background(), bobs, "bob")
	time.Sleep(60 * time.Millisecond) // past idle, so that the sweep below has work
	now := time.Now()
	tab.endWhere(nil, func(s *session) bool { return len(s.inFlight) == 0 && now.Sub(s.last) >= tab.idle })
	if len(ended) != 1 || ended[0] != quiet || tab.count() != 2 {
		t.Fatalf("swept %v, %d left", ended, tab.count())
	}
	if n := tab.endAgent("alice", nil); n != 1 || stream.Err() == nil {
		t.Fatalf("endAgent: %d ended, stream %v", n, stream.Err())
	}
	done()
	if _, _, ok := tab.enter(context.Background(), listening, "alice"); ok || tab.count() != 1 {
		t.Fatal("an ended session is still open")
	}
}
