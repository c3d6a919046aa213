package ipc

import (
	"context"
	"errors"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"
)

// One request in a started worker: written, answered or stopped.

type readResult struct {
	resp *Response
	err  error
	// memoryHigh: the worker sent its memory alert (PhaseMemoryHigh).
	memoryHigh bool
}

// budgets are the kill deadlines of one request: the statement's timeout,
// and a destructive query's own snapshot budget, which the worker opens
// and closes with progress frames.
type budgets struct {
	statement, snapshot time.Duration
}

func budgetsOf(req *Request) budgets {
	b := budgets{statement: time.Duration(req.Limits.TimeoutMS) * time.Millisecond}
	if b.statement <= 0 {
		b.statement = 10 * time.Second
	}
	if s := req.Snapshot; s != nil && s.Keep > 0 {
		b.snapshot = time.Duration(s.TimeoutMS) * time.Millisecond
		if b.snapshot <= 0 {
			b.snapshot = b.statement
		}
	}
	return b
}

// run sends req to p and returns the worker's answer, or a *RunError when
// the worker was stopped or gave none.
func (p *process) run(ctx context.Context, req *Request, onProgress func(Progress), background *sync.WaitGroup) (*Response, error) {
	b := budgetsOf(req)
	// Phase changes reach the kill timer below: at most a snapshot start
	// and, after it, a statement start, so two slots never block.
	phases := make(chan Phase, 2)
	answered := make(chan readResult, 1)
	drained := make(chan struct{})
	trace := TraceFrom(ctx)
	go func() {
		var phase Phase
		var memoryHigh bool
		resp, err := ReadResponseProgress(p.stdout, func(pr Progress) {
			if pr.Phase == PhaseMemoryHigh {
				// Kept to classify a death; no client hears of it.
				memoryHigh = true
				return
			}
			switch {
			case pr.Phase == PhaseSnapshot && phase == "" && b.snapshot > 0,
				pr.Phase == PhaseStatement && phase == PhaseSnapshot:
				phase = pr.Phase
				phases <- phase
			}
			if onProgress != nil {
				onProgress(pr)
			}
		})
		if trace != nil && resp != nil {
			trace.Back, trace.Worker = now(), resp.Trace
		}
		answered <- readResult{resp, err, memoryHigh}
		// Drain what is left so that a chatty worker cannot block on a full
		// pipe before it exits.
		_, _ = io.Copy(io.Discard, p.stdout)
		close(drained)
	}()
	if trace != nil {
		trace.Prewoken = p.prewoken.Load()
		trace.HandedOff = now()
	}
	if err := WriteFrame(p.stdin, req); err != nil {
		// The worker died before reading; its exit tells why below.
		p.relay.log.Debug("writing request failed", "error", err)
	}
	_ = p.stdin.Close()

	budget := b.statement
	timer := time.NewTimer(budget + KillGrace)
	defer timer.Stop()
	var res readResult
	var killed RunReason
	phase := PhaseStatement // until a snapshot frame: the statement's budget runs
wait:
	for {
		select {
		case res = <-answered:
			break wait
		case phase = <-phases:
			// The snapshot has its own budget; the statement's timeout
			// starts again once the snapshot is complete.
			budget = b.statement
			if phase == PhaseSnapshot {
				budget = b.snapshot
			}
			timer.Reset(budget + KillGrace)
		case <-timer.C:
			killed = RunTimeout
			p.kill()
			res = <-answered
			break wait
		case <-ctx.Done():
			killed = RunCancelled
			p.kill()
			res = <-answered
			break wait
		}
	}
	if killed == 0 && res.err == nil {
		// Answered: the worker is exiting; reap it off the call path.
		background.Add(1)
		go func() {
			defer background.Done()
			<-drained
			_ = p.wait()
		}()
		return res.resp, nil
	}
	<-drained
	waitErr := p.wait()

	switch {
	case killed == RunTimeout:
		return nil, &RunError{Reason: RunTimeout, Phase: phase, Budget: budget}
	case killed == RunCancelled:
		return nil, &RunError{Reason: RunCancelled, Phase: phase}
	case res.memoryHigh && waitErr != nil:
		// It said its memory was high, then died (a worker that wrote its
		// answer exits 0). Its stderr is not read for this: a death
		// without the alert is WORKER_FAILED, whatever the runtime said.
		return nil, &RunError{Reason: RunOutOfMemory, Phase: phase, Exit: exitText(waitErr), MemoryMB: req.Limits.MemoryMB}
	case errors.Is(res.err, errEmptyFrame):
		return nil, &RunError{Reason: RunNoAnswer, Phase: phase, Exit: exitText(waitErr)}
	}
	return nil, &RunError{Reason: RunBadAnswer, Phase: phase, Exit: exitText(waitErr), Err: res.err}
}

func exitText(err error) string {
	if err == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return strings.TrimPrefix(ee.Error(), "exit ")
	}
	return err.Error()
}
