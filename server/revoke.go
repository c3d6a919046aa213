package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/tokens"
)

// Revocation is immediate (SPEC 11.1). Every HTTP request of an agent
// runs in a context derived from that agent's own, which is cancelled
// (cause errRevoked) when the token file drops or changes the agent's
// token: its calls in flight stop (their workers killed by the usual
// cancellation, audited CANCELLED with reasonRevoked), its GET streams
// end, its 2025-11-25 sessions are ended and its 2026-07-28 questions
// dropped. A watcher looks at the file every tokenPollEvery; a request
// whose token the watcher does not know yet makes it look at once.

// errRevoked is the cause of a request's context when its agent's token
// was revoked.
var errRevoked = errors.New(reasonRevoked)

// tokenPollEvery is how often the token file's stamp is looked at; a
// variable so that tests can change it.
var tokenPollEvery = 250 * time.Millisecond

// revocations holds each agent's context and the tokens last seen.
type revocations struct {
	s        *Server
	tokens   *tokens.Set
	sessions *sessionTable

	poll sync.Mutex // one look at the file at a time

	mu    sync.Mutex
	known map[string][sha256.Size]byte // agent -> its token's hash, as last seen
	live  map[string]*agentContext
	stop  context.CancelFunc
	done  chan struct{}
}

// agentContext is the context of one agent's requests made with the
// token of hash.
type agentContext struct {
	hash   [sha256.Size]byte
	ctx    context.Context
	cancel context.CancelCauseFunc
}

// watchRevocations starts the watcher of set; stopWatch ends it.
func (s *Server) watchRevocations(set *tokens.Set, sessions *sessionTable) *revocations {
	ctx, stop := context.WithCancel(context.Background())
	v := &revocations{s: s, tokens: set, sessions: sessions, stop: stop, done: make(chan struct{}),
		live: map[string]*agentContext{}}
	v.look()
	go func() {
		defer close(v.done)
		t := time.NewTicker(tokenPollEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				v.look()
			}
		}
	}()
	return v
}

// stopWatch ends the watcher. A nil v does nothing.
func (v *revocations) stopWatch() {
	if v == nil {
		return
	}
	v.stop()
	<-v.done
}

// bind derives the context of an authenticated request of agent: it
// ends when the request does, or when the agent's token is revoked (at
// once if it already was). end releases it once the request is served.
// A nil v binds nothing.
func (v *revocations) bind(r *http.Request, agent string) (ctx context.Context, end func()) {
	if v == nil {
		return r.Context(), func() {}
	}
	hash := tokens.Hash(bearerOf(r))
	v.mu.Lock()
	if v.known[agent] != hash {
		// A token added since the last look (the guard's lookup read the
		// file anew), or one revoked since that lookup: look now.
		v.mu.Unlock()
		v.look()
		v.mu.Lock()
	}
	if v.known[agent] != hash {
		v.mu.Unlock()
		ctx, cancel := context.WithCancelCause(r.Context())
		cancel(errRevoked)
		return ctx, func() {}
	}
	a := v.live[agent]
	if a == nil || a.hash != hash {
		a = &agentContext{hash: hash}
		a.ctx, a.cancel = context.WithCancelCause(context.Background())
		v.live[agent] = a
	}
	v.mu.Unlock()
	ctx, cancel := context.WithCancelCause(r.Context())
	stop := context.AfterFunc(a.ctx, func() { cancel(context.Cause(a.ctx)) })
	return ctx, func() {
		stop()
		cancel(nil)
	}
}

// look re-reads the token file if it changed and revokes every agent
// whose token was dropped or changed. A file that cannot be used (unsafe,
// unreadable, a symbolic link) accepts no token, so every agent is
// revoked until it is fixed.
func (v *revocations) look() {
	v.poll.Lock()
	defer v.poll.Unlock()
	entries, err := v.tokens.Entries()
	now := make(map[string][sha256.Size]byte, len(entries))
	for _, e := range entries {
		now[e.Name] = e.Hash
	}
	v.mu.Lock()
	var gone []string
	for agent, hash := range v.known {
		if h, ok := now[agent]; !ok || h != hash {
			gone = append(gone, agent)
		}
	}
	v.known = now
	var cancel []*agentContext
	for _, agent := range gone {
		if a := v.live[agent]; a != nil {
			cancel = append(cancel, a)
			delete(v.live, agent)
		}
	}
	v.mu.Unlock()
	// Sessions first: a client whose request ends finds its session gone.
	for _, agent := range gone {
		v.revoked(agent, err)
	}
	for _, a := range cancel {
		a.cancel(errRevoked)
	}
}

// revoked ends what agent has besides its requests: its 2025-11-25
// sessions (their ids answer 404 from now on, even to a new token of the
// same name) and its questions waiting for a 2026-07-28 retry.
func (v *revocations) revoked(agent string, fileErr error) {
	ids := v.sessions.endAgent(agent)
	for _, id := range ids {
		v.s.mcp.UnregisterSession(context.Background(), id)
	}
	questions := v.s.confirms.dropAgent(agent)
	why := "its token was revoked or replaced"
	if fileErr != nil {
		why = "the token file cannot be used: " + fileErr.Error()
	}
	v.s.log.Info("agent revoked: its calls in flight are cancelled, its streams and sessions ended", "agent", agent, "why", why, "sessions", len(ids), "questions", questions)
}

// bearerOf is the token of a request's Authorization header, as the
// guard reads it.
func bearerOf(r *http.Request) string {
	scheme, tok, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// endAgent ends every session of agent and returns their ids.
func (t *sessionTable) endAgent(agent string) []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var ids []string
	for id, owner := range t.agents {
		if owner == agent {
			ids = append(ids, id)
			delete(t.agents, id)
		}
	}
	return ids
}

// dropAgent audits every question of agent still waiting for its retry
// as CANCELLED (its token was revoked) and forgets it; it returns how
// many there were.
func (p *pendingConfirms) dropAgent(agent string) int {
	p.mu.Lock()
	var dropped []*pendingConfirm
	for token, pc := range p.pending {
		if pc.agent == agent {
			dropped = append(dropped, pc)
			delete(p.pending, token)
		}
	}
	p.mu.Unlock()
	for _, pc := range dropped {
		pc.timer.Stop()
		pc.expire(errcode.New(errcode.Cancelled, reasonRevoked))
	}
	return len(dropped)
}
