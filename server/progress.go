package server

import (
	"context"
	"fmt"
	"math"
	"sync"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
	mcpserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
)

// progressEvery is how often a call with a progress token hears from the
// server; the first notification comes after one period, so quick calls
// send none. A variable so that tests can shorten it.
var progressEvery = time.Second

// progress sends notifications/progress for one call: progress is the
// seconds the call has run, total the seconds by which it ends at the
// latest (its timeout, moved by a snapshot's own budget), and the message
// says what the worker reported last (pages copied, candidate rows
// scanned).
type progress struct {
	s     *Server
	ctx   context.Context
	stdio *mcpstdio.Call // nil for in-process clients
	token mcp.ProgressToken
	tool  string
	start time.Time

	mu       sync.Mutex
	last     ipc.Progress // the worker's latest frame
	deadline time.Time    // when the call's current budget ends

	quit chan struct{}
	done chan struct{}
}

func (s *Server) startProgress(ctx context.Context, stdio *mcpstdio.Call, token mcp.ProgressToken, tool string, start time.Time) *progress {
	p := &progress{
		s: s, ctx: ctx, stdio: stdio, token: token, tool: tool, start: start,
		deadline: start.Add(s.cfg.QueryTimeout),
		quit:     make(chan struct{}), done: make(chan struct{}),
	}
	go p.loop()
	return p
}

// worker takes the worker's progress frames (ipc.Spawner.RunWithProgress).
func (p *progress) worker(f ipc.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.Phase != p.last.Phase {
		// The kill timer moves the same way (ipc.Spawner.Run).
		switch f.Phase {
		case ipc.PhaseSnapshot:
			p.deadline = time.Now().Add(p.s.cfg.SnapshotTimeout)
		case ipc.PhaseStatement:
			p.deadline = time.Now().Add(p.s.cfg.QueryTimeout)
		}
	}
	p.last = f
}

// phaseConfirm marks a call waiting for the person's answer, phaseQueued
// one waiting in its agent's line (--max-calls-per-agent), phaseWorker
// one waiting for its turn at a worker (--max-workers).
const (
	phaseConfirm = "confirm"
	phaseQueued  = "queued"
	phaseWorker  = "worker"
)

// queued says the call waits in its agent's line until deadline at the
// latest. A nil progress does nothing.
func (p *progress) queued(deadline time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.deadline = ipc.Progress{Phase: phaseQueued}, deadline
}

// waitingForWorker says every one of the n workers is busy: the call
// waits for its turn (its budget starts with the worker).
func (p *progress) waitingForWorker(n int) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.deadline = ipc.Progress{Phase: phaseWorker, Total: int64(n)}, time.Now().Add(p.s.cfg.QueryTimeout)
}

// waiting says the call waits for the person until deadline; running that
// the wait is over and the statement runs. A nil progress does nothing.
func (p *progress) waiting(deadline time.Time) {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.deadline = ipc.Progress{Phase: phaseConfirm}, deadline
}

func (p *progress) running() {
	if p == nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.last, p.deadline = ipc.Progress{}, time.Now().Add(p.s.cfg.QueryTimeout)
}

func (p *progress) loop() {
	defer close(p.done)
	t := time.NewTicker(progressEvery)
	defer t.Stop()
	for {
		select {
		case <-p.quit:
			return
		case <-p.ctx.Done():
			return
		case now := <-t.C:
			p.send(now)
		}
	}
}

func (p *progress) send(now time.Time) {
	p.mu.Lock()
	last, deadline := p.last, p.deadline
	p.mu.Unlock()
	elapsed := now.Sub(p.start)
	total := deadline.Sub(p.start)
	if total < elapsed {
		total = elapsed
	}
	msg := fmt.Sprintf("%s running for %s (stopped after %s)", p.tool, roundSeconds(elapsed), roundSeconds(total))
	switch last.Phase {
	case phaseConfirm:
		msg = fmt.Sprintf("%s: waiting for the user to allow the statement (declined after %s)", p.tool, roundSeconds(total))
	case phaseQueued:
		msg = fmt.Sprintf("%s: waiting in line for one of this agent's calls in flight to finish (--max-calls-per-agent; refused after %s)", p.tool, roundSeconds(total))
	case phaseWorker:
		msg = fmt.Sprintf("%s: waiting for a worker: all %d are busy (--max-workers), and agents take turns (%s)", p.tool, last.Total, roundSeconds(elapsed))
	case ipc.PhaseSnapshot:
		msg = fmt.Sprintf("%s: snapshot, %d of %d pages copied (%s)", p.tool, last.Done, last.Total, roundSeconds(elapsed))
	case ipc.PhaseStatement:
		msg = fmt.Sprintf("%s: snapshot done, statement running (%s)", p.tool, roundSeconds(elapsed))
	case ipc.PhaseSearch:
		msg = fmt.Sprintf("%s: %d of at most %d candidate rows scanned (%s)", p.tool, last.Done, last.Total, roundSeconds(elapsed))
	}
	params := map[string]any{
		"progressToken": p.token,
		"progress":      tenths(elapsed),
		"total":         tenths(total),
		"message":       msg,
	}
	var err error
	if p.stdio != nil {
		err = p.stdio.Notify(string(mcp.MethodNotificationProgress), params)
	} else if srv := mcpserver.ServerFromContext(p.ctx); srv != nil {
		err = srv.SendNotificationToClient(p.ctx, string(mcp.MethodNotificationProgress), params)
	}
	if err != nil {
		p.s.log.Debug("progress notification not sent", "tool", p.tool, "error", err)
	}
}

// stop ends the notifications; none is sent once it returns. A nil
// progress does nothing.
func (p *progress) stop() {
	if p == nil {
		return
	}
	close(p.quit)
	<-p.done
}

func tenths(d time.Duration) float64 { return math.Round(d.Seconds()*10) / 10 }

func roundSeconds(d time.Duration) string { return d.Round(100 * time.Millisecond).String() }
