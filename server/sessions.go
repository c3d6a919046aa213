package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
)

// sessionTable issues the 2025-11-25 session ids (Mcp-Session-Id) and
// binds each to the agent that opened it: every request that names a
// session, whatever its method, is served only for that agent (owned),
// so another agent's token cannot use, listen to or end it, and what the
// server sends on a session's streams (progress, elicitation) reaches
// only its agent. A session is opened only by an initialize (a GET
// without a session id is refused), within --max-sessions and the
// agent's share of them (capped); one with no request in flight and no
// open stream ends after --session-idle (sweep).
//
// It is mcp-go's session id manager resolver, handed the request (and so
// its agent).
type sessionTable struct {
	max, perAgent int
	idle          time.Duration // --session-idle
	// end drops mcp-go's state of a session the table has ended (set by
	// ServeHTTP; nil in tests).
	end func(id string)

	mu       sync.Mutex
	sessions map[string]*session
	reserved map[string]int // agent -> initializes in flight, not yet in sessions
}

// session is one entry of the table.
type session struct {
	agent    string
	last     time.Time                        // when its last request began or ended
	inFlight map[*int]context.CancelCauseFunc // its requests and streams open now
}

// ErrUnknownSession is what Validate says of a session that is not the
// agent's.
var errUnknownSession = errors.New("unknown session")

func (t *sessionTable) ResolveSessionIdManager(r *http.Request) mcpserver.SessionIdManager {
	a := agentSessions{t: t}
	if r != nil {
		a.agent = AgentFrom(r.Context())
		a.res, _ = r.Context().Value(reservationKey{}).(*reservation)
	}
	return a
}

// agentSessions is the table as one agent's requests see it; agent ""
// (mcp-go's idle sweeper, shutdown) may end any session.
type agentSessions struct {
	t     *sessionTable
	agent string
	res   *reservation // the initialize's slot, taken by capped
}

func (a agentSessions) Generate() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	id := hex.EncodeToString(b[:])
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	if a.t.sessions == nil {
		a.t.sessions = map[string]*session{}
	}
	if a.res != nil && !a.res.used {
		a.res.used = true
		a.t.reserved[a.agent]--
	}
	a.t.sessions[id] = &session{agent: a.agent, last: time.Now(), inFlight: map[*int]context.CancelCauseFunc{}}
	return id
}

func (a agentSessions) Validate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	s, ok := a.t.sessions[id]
	if !ok || s.agent != a.agent {
		return false, errUnknownSession
	}
	return false, nil
}

func (a agentSessions) Terminate(id string) (bool, error) {
	a.t.mu.Lock()
	defer a.t.mu.Unlock()
	s, ok := a.t.sessions[id]
	if !ok {
		return false, nil
	}
	if a.agent != "" && s.agent != a.agent {
		return true, nil
	}
	delete(a.t.sessions, id)
	return false, nil
}

// owned refuses, with 404 as for an unknown session, every request that
// names a session (Mcp-Session-Id) the agent does not own, whatever its
// method; and a GET without a session id, which on a 2025-11-25 server
// would open a session without an initialize (400, as the transport asks
// of a server that requires sessions; a 2026-07-28 GET goes on to mcp-go,
// which answers 405). A request of a session counts as in flight until
// it ends (a GET is the session's stream); ending the session cancels it.
func (t *sessionTable) owned(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id := r.Header.Get(mcpserver.HeaderKeySessionID)
		if id == "" {
			if r.Method == http.MethodGet && !mcp.IsModernProtocol(r.Header.Get(mcp.HeaderProtocolVersion)) {
				httpguard.Refuse(w, r, http.StatusBadRequest, "GET /mcp listens on a session: send the Mcp-Session-Id header that initialize answered (a session is opened only by an initialize)")
				return
			}
			next.ServeHTTP(w, r)
			return
		}
		ctx, done, ok := t.enter(r.Context(), id, AgentFrom(r.Context()))
		if !ok {
			httpguard.Refuse(w, r, http.StatusNotFound, "unknown session: this Mcp-Session-Id is not one of this agent's open sessions (it ended, or another agent opened it); send initialize for a new one")
			return
		}
		defer done()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// enter counts a request of session id in flight, if agent owns it; done
// counts it out.
func (t *sessionTable) enter(ctx context.Context, id, agent string) (context.Context, func(), bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.sessions[id]
	if !ok || s.agent != agent {
		return nil, nil, false
	}
	ctx, cancel := context.WithCancelCause(ctx)
	key := new(int)
	s.inFlight[key] = cancel
	s.last = time.Now()
	return ctx, func() {
		cancel(nil)
		t.mu.Lock()
		delete(s.inFlight, key)
		s.last = time.Now()
		t.mu.Unlock()
	}, true
}

type reservationKey struct{}

// reservation is an initialize's session slot, from capped until
// Generate takes it (or the request ends without a session).
type reservation struct{ used bool }

// capped lets an initialize open a session only while the server has
// fewer than --max-sessions and its agent fewer than
// --max-sessions-per-agent; the slot is reserved before mcp-go runs the
// initialize, so that concurrent ones cannot overshoot.
func (t *sessionTable) capped(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Header.Get(mcpserver.HeaderKeySessionID) != "" || !isInitialize(r) {
			next.ServeHTTP(w, r)
			return
		}
		agent := AgentFrom(r.Context())
		res, status, msg := t.reserve(agent)
		if res == nil {
			w.Header().Set("Retry-After", "60")
			httpguard.Refuse(w, r, status, msg)
			return
		}
		defer t.release(agent, res)
		next.ServeHTTP(w, r.WithContext(context.WithValue(r.Context(), reservationKey{}, res)))
	})
}

func (t *sessionTable) reserve(agent string) (*reservation, int, string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.reserved == nil {
		t.reserved = map[string]int{}
	}
	all, mine := t.reserved[agent], t.reserved[agent]
	for a, n := range t.reserved {
		if a != agent {
			all += n
		}
	}
	for _, s := range t.sessions {
		all++
		if s.agent == agent {
			mine++
		}
	}
	if t.perAgent > 0 && mine >= t.perAgent {
		return nil, http.StatusTooManyRequests, fmt.Sprintf("agent %s has %d sessions open (--max-sessions-per-agent %d); end unused ones (DELETE /mcp with their Mcp-Session-Id) or wait for idle ones to end (--session-idle)", agent, mine, t.perAgent)
	}
	if all >= t.max {
		return nil, http.StatusServiceUnavailable, fmt.Sprintf("the server has %d sessions open (--max-sessions); end unused ones (DELETE /mcp) or wait for idle ones to expire", t.max)
	}
	t.reserved[agent]++
	return &reservation{}, 0, ""
}

// release gives back a slot no session took.
func (t *sessionTable) release(agent string, res *reservation) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if !res.used {
		res.used = true
		t.reserved[agent]--
	}
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

// count is the number of open sessions.
func (t *sessionTable) count() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.sessions)
}

// sweep ends, every interval until ctx ends, the sessions that have had
// no request in flight for --session-idle.
func (t *sessionTable) sweep(ctx context.Context) {
	tick := time.NewTicker(min(max(t.idle/4, 100*time.Millisecond), 30*time.Second))
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-tick.C:
			t.endWhere(nil, func(s *session) bool { return len(s.inFlight) == 0 && now.Sub(s.last) >= t.idle })
		}
	}
}

// endAgent ends every session of agent: its requests and streams in
// flight are cancelled, and its session ids are unknown from now on (a
// revoked token's agent, SPEC 11.1).
func (t *sessionTable) endAgent(agent string, cause error) int {
	return t.endWhere(cause, func(s *session) bool { return s.agent == agent })
}

// endWhere ends the sessions that match and says how many; their
// requests in flight end with cause (nil: context.Canceled).
func (t *sessionTable) endWhere(cause error, match func(*session) bool) int {
	t.mu.Lock()
	var ended []string
	for id, s := range t.sessions {
		if match(s) {
			delete(t.sessions, id)
			for _, cancel := range s.inFlight {
				cancel(cause)
			}
			ended = append(ended, id)
		}
	}
	t.mu.Unlock()
	if t.end != nil {
		for _, id := range ended {
			t.end(id)
		}
	}
	return len(ended)
}
