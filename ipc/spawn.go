package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
)

// KillGrace is how long the front waits past a request's timeout (when the
// worker interrupts itself) before it kills the worker. Tests shorten it.
var KillGrace = 200 * time.Millisecond

// Config says how to start workers.
type Config struct {
	// Path and Args start one worker, e.g. the server binary with "worker".
	Path string
	Args []string
	Env  []string
	// MaxWorkers bounds the workers running statements at once.
	MaxWorkers int
	// Standby is how many workers are kept started ahead, waiting for their
	// request, so that process start-up is off the call path.
	Standby int
	// MemoryMB is applied from outside where the platform allows it (a Job
	// Object on Windows); the worker also limits itself.
	MemoryMB int
	Log      hclog.Logger
}

// Spawner runs requests, each in a fresh worker process.
type Spawner struct {
	cfg Config
	log hclog.Logger
	sem chan struct{}

	mu      sync.Mutex
	standby []*process
	closed  bool
	filling int

	// background counts goroutines that start standby workers or reap
	// workers that answered (an answer never waits for a process exit);
	// Close waits for them, so no worker outlives the spawner.
	background sync.WaitGroup
}

// NewSpawner checks cfg and starts the standby workers.
func NewSpawner(cfg Config) (*Spawner, error) {
	if cfg.Path == "" {
		return nil, errors.New("ipc: no worker path")
	}
	if cfg.MaxWorkers < 1 {
		cfg.MaxWorkers = 1
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	s := &Spawner{cfg: cfg, log: cfg.Log, sem: make(chan struct{}, cfg.MaxWorkers)}
	s.refill()
	return s, nil
}

// Run executes req in a worker and returns its response. Process-level
// failures (timeout, crash, garbage, memory) come back as a failed Response
// with the matching code; Run never returns a nil Response.
// Cancelling ctx kills the worker (its process group) at once and yields
// CANCELLED: the client cancelled the call, or the server is stopping.
// Progress frames of the worker go to the function set with WithProgress.
func (s *Spawner) Run(ctx context.Context, req *Request) *Response {
	req.Version = Version
	if err := checkRequestSize(req); err != nil {
		return Failure(err)
	}
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return Failure(NewError(CodeCancelled, "the call was cancelled before it ran"))
	}
	defer func() { <-s.sem }()

	p, err := s.take()
	if err != nil {
		return Failure(NewError(CodeWorkerFailed, "could not start a worker process: "+err.Error()))
	}
	s.refill()
	return p.run(ctx, req, &s.background)
}

// Close kills the standby workers. Running requests finish on their own
// deadlines; callers wait for them before calling Close.
func (s *Spawner) Close() {
	s.mu.Lock()
	s.closed = true
	standby := s.standby
	s.standby = nil
	s.mu.Unlock()
	for _, p := range standby {
		p.kill()
		p.wait()
	}
	s.background.Wait()
}

// take returns a live standby worker, or starts one.
func (s *Spawner) take() (*process, error) {
	for {
		s.mu.Lock()
		if len(s.standby) == 0 {
			s.mu.Unlock()
			return s.start()
		}
		p := s.standby[0]
		s.standby = s.standby[1:]
		s.mu.Unlock()
		if p.exited() {
			p.wait()
			s.log.Warn("standby worker had exited; starting another", "pid", p.pid())
			continue
		}
		return p, nil
	}
}

// refill starts standby workers in the background up to cfg.Standby.
func (s *Spawner) refill() {
	s.mu.Lock()
	missing := s.cfg.Standby - len(s.standby) - s.filling
	if s.closed || missing <= 0 {
		s.mu.Unlock()
		return
	}
	s.filling += missing
	// Added under the lock: Close marks closed under it before it waits.
	s.background.Add(missing)
	s.mu.Unlock()
	for range missing {
		go func() {
			defer s.background.Done()
			p, err := s.start()
			s.mu.Lock()
			s.filling--
			if err == nil && !s.closed {
				s.standby = append(s.standby, p)
				p = nil
			}
			s.mu.Unlock()
			if err != nil {
				s.log.Error("could not start a standby worker", "error", err)
			}
			if p != nil {
				p.kill()
				p.wait()
			}
		}()
	}
}

// process is one started worker waiting for, or running, its request.
type process struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.ReadCloser
	platform platformHandle
	relay    *stderrRelay
	started  time.Time
}

func (s *Spawner) start() (*process, error) {
	cmd := exec.Command(s.cfg.Path, s.cfg.Args...)
	cmd.Env = s.cfg.Env
	prepareCommand(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &process{cmd: cmd, stdin: stdin, stdout: stdout, started: time.Now()}
	p.relay = newStderrRelay(stderr, s.log.Named("worker").With("pid", cmd.Process.Pid))
	h, err := attachLimits(cmd, s.cfg.MemoryMB)
	if err != nil {
		p.kill()
		p.wait()
		return nil, fmt.Errorf("apply worker limits: %w", err)
	}
	p.platform = h
	return p, nil
}

func (p *process) pid() int { return p.cmd.Process.Pid }

// exited reports whether the worker is gone: its stderr closes when it exits.
func (p *process) exited() bool {
	select {
	case <-p.relay.done:
		return true
	default:
		return false
	}
}

func (p *process) kill() { killProcess(p.cmd, p.platform) }

// wait reaps the process once its pipes are drained.
func (p *process) wait() error {
	<-p.relay.done
	err := p.cmd.Wait()
	releaseLimits(p.platform)
	return err
}

type readResult struct {
	resp *Response
	err  error
}

type progressKey struct{}

// WithProgress returns a context under which Run passes each progress frame
// of its worker to fn, in order, on a goroutine of its own; all calls are
// done before Run returns.
func WithProgress(ctx context.Context, fn func(Progress)) context.Context {
	return context.WithValue(ctx, progressKey{}, fn)
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

func (p *process) run(ctx context.Context, req *Request, background *sync.WaitGroup) *Response {
	b := budgetsOf(req)
	onProgress, _ := ctx.Value(progressKey{}).(func(Progress))
	// Phase changes reach the kill timer below: at most a snapshot start
	// and, after it, a statement start, so two slots never block.
	phases := make(chan string, 2)
	answered := make(chan readResult, 1)
	drained := make(chan struct{})
	go func() {
		phase := ""
		resp, err := ReadResponseProgress(p.stdout, func(pr Progress) {
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
		answered <- readResult{resp, err}
		// Drain what is left so that a chatty worker cannot block on a full
		// pipe before it exits.
		_, _ = io.Copy(io.Discard, p.stdout)
		close(drained)
	}()
	if err := WriteFrame(p.stdin, req); err != nil {
		// The worker died before reading; its exit tells why below.
		p.relay.log.Debug("writing request failed", "error", err)
	}
	_ = p.stdin.Close()

	budget := b.statement
	timer := time.NewTimer(budget + KillGrace)
	defer timer.Stop()
	var res readResult
	killed, phase := "", ""
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
			killed = "timeout"
			p.kill()
			res = <-answered
			break wait
		case <-ctx.Done():
			killed = "cancelled"
			p.kill()
			res = <-answered
			break wait
		}
	}
	if killed == "" && res.err == nil {
		// Answered: the worker is exiting; reap it off the call path.
		background.Add(1)
		go func() {
			defer background.Done()
			<-drained
			_ = p.wait()
		}()
		return res.resp
	}
	<-drained
	waitErr := p.wait()

	switch {
	case killed == "timeout" && phase == PhaseSnapshot:
		return Failure(NewError(CodeTimeout, fmt.Sprintf("the snapshot was not complete after %s (worker killed); nothing was changed and no partial snapshot is kept. Raise --snapshot-timeout, or free disk bandwidth", seconds(budget))))
	case killed == "timeout":
		return Failure(NewError(CodeTimeout, fmt.Sprintf("query stopped after %s (worker killed); narrow the query, add a LIMIT, or raise --query-timeout", seconds(budget))))
	case killed == "cancelled":
		return Failure(NewError(CodeCancelled, "the call was cancelled; its worker was stopped and nothing it did was kept"))
	}
	if p.relay.sawOutOfMemory() {
		return Failure(NewError(CodeResourceLimit, "the worker ran out of memory and was stopped; narrow the query (fewer rows, smaller aggregates)"))
	}
	if errors.Is(res.err, errEmptyFrame) {
		return Failure(NewError(CodeWorkerFailed, "the worker exited without an answer ("+exitText(waitErr)+"); the statement may be malformed in a way the worker could not report, try again or simplify it"))
	}
	return Failure(NewError(CodeWorkerFailed, "the worker sent an unreadable answer ("+res.err.Error()+"; "+exitText(waitErr)+")"))
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

func seconds(d time.Duration) string {
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", int(d/time.Second))
	}
	return d.String()
}
