package server

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// sessionOf is the value of the session column (memory_events,
// memory_checkpoints, query_log) for a call of agent: this run's session
// over stdio, "<session>@<agent>" over HTTP. The reference server treats
// session as opaque text, so such rows verify and grow under it; the name
// is inside the hashed columns, so the chain proves who wrote an event.
func (s *Server) sessionOf(agent string) string {
	if agent == "" {
		return s.session
	}
	return s.session + "@" + agent
}

// refuseNewCalls makes every later call answer as stopped by shutdown,
// while the running ones go on (the HTTP grace period).
func (s *Server) refuseNewCalls() {
	s.mu.Lock()
	s.closing = true
	s.mu.Unlock()
}

// agentSlots bounds each agent's calls in flight (--max-calls-per-agent),
// so that one agent cannot hold every worker while the others wait.
type agentSlots struct {
	mu    sync.Mutex
	slots map[string]chan struct{}
}

func (a *agentSlots) of(agent string, n int) chan struct{} {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.slots == nil {
		a.slots = map[string]chan struct{}{}
	}
	ch, ok := a.slots[agent]
	if !ok {
		ch = make(chan struct{}, n)
		a.slots[agent] = ch
	}
	return ch
}

// limited runs fn in one of the agent's slots. A call that finds them all
// taken waits for one if it asked for progress (it hears that it waits),
// at most --query-timeout plus --confirm-timeout (what a call holding a
// slot may take, a snapshot's budget aside); otherwise it is refused at
// once with RESOURCE_LIMIT, which names the limit.
func (s *Server) limited(fn toolFunc) toolFunc {
	return func(ctx context.Context, c *call, a args) (outcome, error) {
		if c.agent == "" {
			return fn(ctx, c, a)
		}
		n := s.cfg.MaxCallsPerAgent
		slots := s.agentSlots.of(c.agent, n)
		full := errcode.New(errcode.ResourceLimit, fmt.Sprintf("agent %s already has %d calls in flight (--max-calls-per-agent %d); wait for one to finish, or send a progressToken to wait in line", c.agent, n, n))
		select {
		case slots <- struct{}{}:
		default:
			if c.progress == nil {
				c.detail["limit"] = "max-calls-per-agent"
				return outcome{}, full
			}
			wait := s.cfg.QueryTimeout + s.cfg.ConfirmTimeout
			c.progress.queued(time.Now().Add(wait))
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case slots <- struct{}{}:
				c.progress.running()
			case <-ctx.Done():
				return outcome{}, ctx.Err()
			case <-t.C:
				c.detail["limit"] = "max-calls-per-agent"
				return outcome{}, full
			}
		}
		defer func() { <-slots }()
		return fn(ctx, c, a)
	}
}
