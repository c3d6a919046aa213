package server

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
)

// sessionTable issues the 2025-11-25 session ids (Mcp-Session-Id), at most
// max at once, and binds each to the agent that opened it: another
// agent's token cannot use, listen to or end it. It is mcp-go's session
// id manager resolver, handed the request (and so its agent).
type sessionTable struct {
	max int

	mu     sync.Mutex
	agents map[string]string // session id -> agent
}

// agentSessions is the table as one agent's requests see it; agent ""
// (mcp-go's idle sweeper, shutdown) may end any session.
type agentSessions struct {
	t     *sessionTable
	agent string
}

func (t *sessionTable) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	a := agentSessions{t: t}
	if r != nil {
		a.agent = AgentFrom(r.Context())
	}
	return a
}

// capped refuses an initialize when the server has --max-sessions open.
func (t *sessionTable) capped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && r.Header.Get(mcpserver.HeaderKeySessionID) == "" && t.full() && isInitialize(r) {
			w.Header().Set("Retry-After", "60")
			httpguard.Refuse(w, r, http.StatusServiceUnavailable, fmt.Sprintf("the server has %d sessions open (--max-sessions); end unused ones (DELETE /mcp) or wait for idle ones to expire", t.max))
			return
		}
		next.ServeHTTP(w, r)
	})
}

// isInitialize tells a request (its body read whole by httpguard.Body)
// that opens a 2025-11-25 session.
func isInitialize(r *http.Request) bool {
	body, ok := httpguard.BodyBytes(r)
	var m struct {
		Method string `json:"method"`
	}
	return ok && json.Unmarshal(body, &m) == nil && m.Method == "initialize"
}

func (t *sessionTable) full() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.agents) >= t.max
}

func (a agentSessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	id := hex.EncodeToString(b[:])
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	if a.t.agents == nil {
		a.t.agents = map[string]string{}
	}
	a.t.agents[id] = a.agent
	return id
}

var errUnknownSession = errors.New("unknown session")

func (a agentSessions) Validate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	owner, ok := a.t.agents[id]
	if !ok || owner != a.agent {
		return false, errUnknownSession
	}
	return false, nil
}

func (a agentSessions) Terminate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	owner, ok := a.t.agents[id]
	if !ok {
		return false, nil
	}
	if a.agent != "" && owner != a.agent {
		return true, nil
	}
	delete(a.t.agents, id)
	return false, nil
}
