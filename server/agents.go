package server

import (
	"context"
	"fmt"
	"slices"
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

// Calls of HTTP agents are admitted in two steps (SPEC 11.1):
//
//   - agentLines: an agent has at most --max-calls-per-agent calls in
//     flight; more wait in its line, first come first served, at most
//     --max-queued-per-agent of them and each at most --queue-wait; only
//     a call beyond those bounds is refused (RESOURCE_LIMIT, saying what to
//     do). A call keeps its place in flight while the person is asked.
//   - workerTurns: the worker pool (--max-workers) is what agents share.
//     A statement of an agent runs in one of --max-workers turns; when
//     none is free it waits, and a freed turn goes to the waiting agent
//     that holds the fewest turns (the longest waiting first among
//     equals). So an agent that floods the server, however many calls it
//     may have in flight, cannot keep another agent's call from the next
//     free worker.
//
// Calls over stdio (agent "") pass both.

// agentLines are the agents' calls in flight and their lines.
type agentLines struct {
	mu    sync.Mutex
	lines map[string]*agentLine
}

type agentLine struct {
	running int
	waiting []*turn // first come first served
}

// turn is one call waiting for its place; ready is closed when it is
// handed one (granted, under the lock of its queue).
type turn struct {
	ready   chan struct{}
	granted bool
	seq     uint64 // arrival order, for workerTurns
}

// enter gives the call of agent a place in flight now (wait nil), or a
// turn to wait for, or refuses it (full) when its line is full.
func (a *agentLines) enter(agent string, inFlight, queued int) (wait *turn, full bool, ahead int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.lines == nil {
		a.lines = map[string]*agentLine{}
	}
	l := a.lines[agent]
	if l == nil {
		l = &agentLine{}
		a.lines[agent] = l
	}
	if l.running < inFlight {
		l.running++
		return nil, false, 0
	}
	if len(l.waiting) >= queued {
		return nil, true, len(l.waiting)
	}
	w := &turn{ready: make(chan struct{})}
	l.waiting = append(l.waiting, w)
	return w, false, len(l.waiting) - 1
}

// leave gives up a waiting turn (timeout, cancellation). It reports
// false when the turn was granted meanwhile: the place is the caller's,
// to use or to release.
func (a *agentLines) leave(agent string, w *turn) bool {
	a.mu.Lock()
	defer a.mu.Unlock()
	if w.granted {
		return false
	}
	l := a.lines[agent]
	if i := slices.Index(l.waiting, w); i >= 0 {
		l.waiting = slices.Delete(l.waiting, i, i+1)
	}
	return true
}

// release ends a call's place in flight: the first in line takes it.
func (a *agentLines) release(agent string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	l := a.lines[agent]
	if len(l.waiting) > 0 {
		w := l.waiting[0]
		l.waiting = slices.Delete(l.waiting, 0, 1)
		w.granted = true
		close(w.ready)
		return
	}
	l.running--
	if l.running == 0 {
		delete(a.lines, agent)
	}
}

// workerTurns share the --max-workers worker processes among agents.
type workerTurns struct {
	mu      sync.Mutex
	max     int
	held    map[string]int
	total   int
	waiting map[string][]*turn
	seq     uint64
}

// take waits for a worker turn of agent until ctx ends; release hands it
// on. waiting is called once if the call has to wait.
func (g *workerTurns) take(ctx context.Context, agent string, waiting func()) (release func(), err error) {
	g.mu.Lock()
	if g.held == nil {
		g.held, g.waiting = map[string]int{}, map[string][]*turn{}
	}
	release = func() { g.release(agent) }
	if g.total < g.max && len(g.waiting) == 0 {
		g.held[agent]++
		g.total++
		g.mu.Unlock()
		return release, nil
	}
	g.seq++
	w := &turn{ready: make(chan struct{}), seq: g.seq}
	g.waiting[agent] = append(g.waiting[agent], w)
	g.mu.Unlock()
	waiting()
	select {
	case <-w.ready:
		return release, nil
	case <-ctx.Done():
		g.mu.Lock()
		granted := w.granted
		if !granted {
			q := g.waiting[agent]
			if i := slices.Index(q, w); i >= 0 {
				q = slices.Delete(q, i, i+1)
			}
			if len(q) == 0 {
				delete(g.waiting, agent)
			} else {
				g.waiting[agent] = q
			}
		}
		g.mu.Unlock()
		if granted {
			release()
		}
		return nil, ctx.Err()
	}
}

func (g *workerTurns) release(agent string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held[agent]--
	if g.held[agent] == 0 {
		delete(g.held, agent)
	}
	g.total--
	// The freed turn goes to the waiting agent holding the fewest turns,
	// the longest waiting first among equals.
	next := ""
	for a, q := range g.waiting {
		if next == "" || g.held[a] < g.held[next] || g.held[a] == g.held[next] && q[0].seq < g.waiting[next][0].seq {
			next = a
		}
	}
	if next == "" || g.total >= g.max {
		return
	}
	q := g.waiting[next]
	w := q[0]
	if len(q) == 1 {
		delete(g.waiting, next)
	} else {
		g.waiting[next] = q[1:]
	}
	g.held[next]++
	g.total++
	w.granted = true
	close(w.ready)
}

// workerTurn waits, for an HTTP agent's call, for its turn at a worker
// (workerTurns); done gives it back. Over stdio it returns at once.
func (s *Server) workerTurn(c *call) (done func(), err error) {
	if c.agent == "" || c.ctx == nil {
		return func() {}, nil
	}
	waited := false
	done, err = s.workerTurns.take(c.ctx, c.agent, func() {
		waited = true
		c.progress.waitingForWorker(s.cfg.MaxWorkers)
	})
	if err == nil && waited {
		c.progress.running()
	}
	return done, err
}

// limited runs fn in one of the agent's places in flight, waiting in
// line for one when all are taken (agentLines).
func (s *Server) limited(fn toolFunc) toolFunc {
	return func(ctx context.Context, c *call, a args) (outcome, error) {
		if c.agent == "" {
			return fn(ctx, c, a)
		}
		n, queued, wait := s.cfg.MaxCallsPerAgent, s.cfg.MaxQueuedPerAgent, s.cfg.QueueWait
		w, full, ahead := s.agentLines.enter(c.agent, n, queued)
		if full {
			c.detail["limit"] = "max-queued-per-agent"
			return outcome{}, errcode.New(errcode.ResourceLimit, fmt.Sprintf("agent %s already has %d calls in flight and %d waiting in line (--max-calls-per-agent %d, --max-queued-per-agent %d); wait for answers before sending more calls", c.agent, n, ahead, n, queued))
		}
		if w != nil {
			c.progress.queued(time.Now().Add(wait))
			t := time.NewTimer(wait)
			defer t.Stop()
			select {
			case <-w.ready:
			case <-ctx.Done():
				if s.agentLines.leave(c.agent, w) {
					return outcome{}, ctx.Err()
				}
				s.agentLines.release(c.agent)
				return outcome{}, ctx.Err()
			case <-t.C:
				if s.agentLines.leave(c.agent, w) {
					c.detail["limit"] = "queue-wait"
					return outcome{}, errcode.New(errcode.ResourceLimit, fmt.Sprintf("agent %s waited %s in line behind %d calls in flight (--max-calls-per-agent %d, --queue-wait %s) and was not served; send fewer calls at once, or call again when earlier ones have answered", c.agent, roundSeconds(wait), n, n, roundSeconds(wait)))
				}
			}
			c.progress.running()
		}
		defer s.agentLines.release(c.agent)
		return fn(ctx, c, a)
	}
}
