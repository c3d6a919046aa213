package server

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/httpguard"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/oauth"
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
	known map[string]grant // agent -> its token, as last seen
	live  map[string]*agentContext
	stop  context.CancelFunc
	done  chan struct{}
}

// grant is an agent's token as the file holds it: its hash and scopes.
type grant struct {
	hash   [sha256.Size]byte
	scopes []string
}

// narrowed tells whether now takes something from g: another token, or
// a scope fewer (a token file change that restricts it, SPEC 11.1).
func (g grant) narrowed(now grant, present bool) bool {
	if !present || now.hash != g.hash {
		return true
	}
	for _, sc := range g.scopes {
		if !slices.Contains(now.scopes, sc) {
			return true
		}
	}
	return false
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
	if set == nil {
		return nil // OAuth alone: no token file to watch
	}
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
	tok, _ := httpguard.BearerToken(r) // as the front door read it
	hash := tokens.Hash(tok)
	v.mu.Lock()
	if v.known[agent].hash != hash {
		// A token added since the last look (the guard's lookup read the
		// file anew), or one revoked since that lookup: look now.
		v.mu.Unlock()
		v.look()
		v.mu.Lock()
	}
	if v.known[agent].hash != hash {
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

// bound is the front door's step after authentication: a static
// token's request runs in a context that ends when the token is revoked
// (bind). An OAuth agent's token is not in the file: it ends when it
// expires. A nil v passes every request on.
func (v *revocations) bound(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		agent := AgentFrom(r.Context())
		if v == nil || agent == "" || strings.HasPrefix(agent, oauth.AgentPrefix) {
			next.ServeHTTP(w, r)
			return
		}
		ctx, end := v.bind(r, agent)
		defer end()
		next.ServeHTTP(w, r.WithContext(ctx))
	})
}

// look re-reads the token file if it changed and revokes every agent
// whose token was dropped or changed. A file that cannot be used (unsafe,
// unreadable, a symbolic link) accepts no token, so every agent is
// revoked until it is fixed.
func (v *revocations) look() {
	v.poll.Lock()
	defer v.poll.Unlock()
	entries, err := v.tokens.Entries()
	now := make(map[string]grant, len(entries))
	for _, e := range entries {
		now[e.Name] = grant{hash: e.Hash, scopes: e.Scopes}
	}
	v.mu.Lock()
	var gone []string
	for agent, was := range v.known {
		if g, ok := now[agent]; was.narrowed(g, ok) {
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
	// The table's end hook drops mcp-go's state of each (endSession).
	ended := v.sessions.endAgent(agent, errRevoked)
	questions := v.s.confirms.dropAgent(agent)
	why := "its token was revoked or replaced"
	if fileErr != nil {
		why = "the token file cannot be used: " + fileErr.Error()
	}
	v.s.log.Info("agent revoked: its calls in flight are cancelled, its streams and sessions ended", "agent", agent, "why", why, "sessions", ended, "questions", questions)
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
