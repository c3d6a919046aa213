package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// KillGrace is how long the front waits past a request's timeout (when the
// worker interrupts itself) before it kills the worker. Tests shorten it.
var KillGrace = 200 * time.Millisecond

// RefillDelay is how long the spawner waits, once no call is running, before
// it starts a replacement standby. When the worker's answer reaches Run the
// call is not over: the front still writes its audit row and mcp-go encodes
// and writes the reply, and the host must read it; a process start then
// would compete with them for the CPU. The delay covers that tail (see
// ipc/DESIGN.md for the measurement); it costs nothing when calls are
// spaced out, and in a stream with no pauses the pool is refilled anyway
// once it is empty.
var RefillDelay = 5 * time.Millisecond

// ReadyWait bounds how long the spawner waits for a standby it started to
// say it is ready before it starts the next one (a worker that never says
// so, such as a foreign --worker binary, still serves calls).
var ReadyWait = 10 * time.Second

// Config says how to start workers.
type Config struct {
	// Path and Args start one worker, e.g. the server binary with "worker".
	Path string
	Args []string
	// Env is the workers' environment (nil: the front's own).
	Env []string
	// MaxWorkers bounds the worker processes alive at once: running a
	// request, standing by, or starting (each may use MemoryMB).
	MaxWorkers int
	// Standby is how many workers are kept started ahead, confined and
	// waiting for their request, so that process start-up is off the call
	// path. They count toward MaxWorkers.
	Standby int
	// MemoryMB is each worker's memory budget: applied from outside where
	// the platform allows it (a Job Object on Windows), and handed to the
	// worker, which limits itself before its request arrives.
	MemoryMB int
	Log      hclog.Logger
}

// Spawner runs requests, each in a fresh worker process, and keeps a pool
// of standby workers.
//
// The pool is refilled off the call path: a replacement starts only once
// no call has been running for RefillDelay, one at a time (the next when
// the last one is ready), except when the pool is empty while calls run:
// then a replacement starts at once, since the next call needs it more
// than the running ones need the CPU.
type Spawner struct {
	cfg Config
	log hclog.Logger

	// confine is the sandbox allowance of cfg.Env, if any; while launch is
	// true, workers are started confined by the front (no re-execution).
	confine *sandbox.Allowance
	launch  atomic.Bool

	mu     sync.Mutex
	pool   []*process // standbys, oldest first: ready, or still starting
	alive  int        // processes started (or being started) and not yet reaped
	calls  int        // calls inside Run
	idleAt time.Time  // when calls last fell to zero
	// rush is set when calls run and no standby is ready: the filler then
	// starts replacements back to back until the pool is full again.
	rush   bool
	closed bool
	// failures counts standbys that died before a call took them (or
	// could not start) since one last served a call, the last at failedAt:
	// the filler backs off.
	failures int
	failedAt time.Time
	// changed is closed and replaced whenever a standby joins the pool or
	// a process slot frees up: calls waiting for a worker watch it.
	changed chan struct{}

	wake chan struct{} // nudges the filler
	stop chan struct{} // closed by Close

	// background counts the filler, the goroutines that watch standbys and
	// those that reap workers that answered (an answer never waits for a
	// process exit); Close waits for them, so no worker outlives the
	// spawner.
	background sync.WaitGroup
}

// NewSpawner checks cfg and starts filling the standby pool.
func NewSpawner(cfg Config) (*Spawner, error) {
	if cfg.Path == "" {
		return nil, errors.New("ipc: no worker path")
	}
	if cfg.MaxWorkers < 1 {
		cfg.MaxWorkers = 1
	}
	if cfg.Standby < 0 || cfg.Standby > cfg.MaxWorkers {
		return nil, fmt.Errorf("ipc: %d standby workers do not fit in %d workers", cfg.Standby, cfg.MaxWorkers)
	}
	if cfg.Log == nil {
		cfg.Log = hclog.NewNullLogger()
	}
	env := cfg.Env
	if env == nil {
		env = os.Environ()
	}
	cfg.Env = append(slices.Clip(env), StandbyEnv(cfg.MemoryMB)...)
	s := &Spawner{
		cfg: cfg, log: cfg.Log,
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	if a := allowanceOf(cfg.Env); a != nil {
		s.confine = a
		s.launch.Store(true)
	}
	s.background.Add(1)
	go s.fill()
	return s, nil
}

// allowanceOf finds the sandbox allowance the workers' environment hands
// down, or nil when there is none (or --sandbox off).
func allowanceOf(env []string) *sandbox.Allowance {
	v := ""
	for _, kv := range env {
		if rest, ok := strings.CutPrefix(kv, sandbox.EnvAllowance+"="); ok {
			v = rest
		}
	}
	if v == "" || v == sandbox.Off {
		return nil
	}
	a, err := sandbox.ParseAllowance(v)
	if err != nil {
		return nil // the worker reports it
	}
	return &a
}

// Run executes req in a worker and returns its response. Process-level
// failures (timeout, crash, garbage, memory) come back as a failed Response
// with the matching code; Run never returns a nil Response.
// Cancelling ctx kills the worker (its process group) at once and yields
// CANCELLED: the client cancelled the call, or the server is stopping.
func (s *Spawner) Run(ctx context.Context, req *Request) *Response {
	return s.RunWithProgress(ctx, req, nil)
}

// RunWithProgress is Run that passes each progress frame of the worker to
// onProgress (if not nil), in order, on a goroutine of its own; all calls
// are done before it returns.
func (s *Spawner) RunWithProgress(ctx context.Context, req *Request, onProgress func(Progress)) *Response {
	req.Version = Version
	if err := checkRequestSize(req); err != nil {
		return Failure(err)
	}
	p, err := s.acquire(ctx)
	if err != nil {
		return Failure(err)
	}
	defer s.callDone()
	if p.launched && !p.isReady() {
		// Its memory limit is set once it is ready; no request before.
		if err := p.awaitStart(ctx); err != nil {
			p.kill()
			s.reapLater(p)
			return Failure(err)
		}
	}
	return p.run(ctx, req, onProgress, &s.background)
}

// Close kills the standby workers. Running requests finish on their own
// deadlines; callers wait for them before calling Close.
func (s *Spawner) Close() {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		s.background.Wait()
		return
	}
	s.closed = true
	standby := s.pool
	s.pool = nil
	s.signal()
	s.mu.Unlock()
	close(s.stop)
	for _, p := range standby {
		p.kill()
		_ = p.wait()
	}
	s.background.Wait()
}

// acquire counts a call in and finds its worker: a standby (a ready one
// first, else the oldest still starting), else a new process when a slot
// is free, else it waits for either.
func (s *Spawner) acquire(ctx context.Context) (*process, error) {
	s.mu.Lock()
	s.calls++
	for {
		if s.closed {
			s.calls--
			s.mu.Unlock()
			return nil, NewError(CodeWorkerFailed, "the server is shutting down; the call was not run")
		}
		if p := s.popStandby(); p != nil {
			none := s.noneReady()
			s.mu.Unlock()
			if none {
				s.nudge() // none ready: the filler refills the pool at once
			}
			if p.exited() {
				s.log.Warn("standby worker had exited; taking another", "pid", p.pid())
				s.reapLater(p)
				s.mu.Lock()
				continue
			}
			s.mu.Lock()
			s.failures = 0
			s.mu.Unlock()
			s.log.Debug("call served by a standby worker", "pid", p.pid(), "ready", p.isReady())
			return p, nil
		}
		if s.alive < s.cfg.MaxWorkers {
			s.alive++
			s.mu.Unlock()
			s.nudge()
			p, err := s.start(false)
			if err != nil {
				s.released()
				s.callDone()
				return nil, NewError(CodeWorkerFailed, "could not start a worker process: "+err.Error())
			}
			s.log.Debug("call started its own worker: no standby left", "pid", p.pid())
			return p, nil
		}
		// Every slot is busy: wait for a standby or a free slot.
		changed := s.changed
		s.mu.Unlock()
		select {
		case <-changed:
		case <-ctx.Done():
			s.callDone()
			return nil, NewError(CodeCancelled, "the call was cancelled before it ran")
		}
		s.mu.Lock()
	}
}

// popStandby takes the first ready standby, else the oldest one. Call with
// s.mu held.
func (s *Spawner) popStandby() *process {
	if len(s.pool) == 0 {
		return nil
	}
	i := slices.IndexFunc(s.pool, (*process).isReady)
	if i < 0 {
		i = 0
	}
	p := s.pool[i]
	s.pool = slices.Delete(s.pool, i, i+1)
	return p
}

// noneReady reports whether no standby in the pool is ready: what makes a
// call nudge the filler and the filler refill at once while calls run.
// Call with s.mu held.
func (s *Spawner) noneReady() bool {
	return !slices.ContainsFunc(s.pool, (*process).isReady)
}

// callDone counts a call out; the last one out starts the refill clock.
func (s *Spawner) callDone() {
	s.mu.Lock()
	s.calls--
	if s.calls == 0 {
		s.idleAt = time.Now()
	}
	s.mu.Unlock()
	s.nudge()
}

// signal wakes the calls waiting for a worker. Call with s.mu held.
func (s *Spawner) signal() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// nudge makes the filler look at the pool again.
func (s *Spawner) nudge() {
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// fill keeps the pool at cfg.Standby until Close. Outside the urgent case
// it starts one standby at a time: the next once the last is ready, so that
// refills never pile up on the CPU.
func (s *Spawner) fill() {
	defer s.background.Done()
	var last *process // the standby started last, while it gets ready
	for {
		if last != nil && (last.readyDone() || time.Since(last.started) > ReadyWait) {
			last = nil
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			return
		}
		wait, start := time.Duration(-1), false
		if len(s.pool) >= s.cfg.Standby || s.calls == 0 {
			s.rush = false
		}
		if len(s.pool) < s.cfg.Standby && s.alive < s.cfg.MaxWorkers {
			switch {
			case s.calls > 0 && (s.rush || s.noneReady()):
				// None ready while calls run: the next call needs one more
				// than the running ones need the CPU. A stream of calls is
				// bound by process starts, so the pool is refilled with
				// starts back to back, which overlap, as many as the pool
				// and --max-workers allow: measured on two cores,
				// back-to-back calls took 8-12 ms each this way, 19 ms
				// with one start at a time.
				s.rush = true
				start = true
			case s.calls > 0:
				// Never compete with a running call; callDone nudges.
			case last != nil:
				// Wait for the last one to be ready.
			default:
				if wait = RefillDelay - time.Since(s.idleAt); wait <= 0 {
					start = true
				}
			}
		}
		if start && s.failures > 0 {
			// A worker that dies at start would otherwise be restarted in
			// a tight loop.
			backoff := min(10*time.Millisecond<<min(s.failures, 8), 2*time.Second)
			if d := backoff - time.Since(s.failedAt); d > 0 {
				start, wait = false, d
			}
		}
		if start {
			s.alive++
		}
		s.mu.Unlock()
		if !start {
			s.sleep(wait, last)
			continue
		}
		p, err := s.start(true)
		if err != nil {
			s.failed()
			s.released()
			s.log.Error("could not start a standby worker", "error", err)
			continue
		}
		s.mu.Lock()
		if s.closed {
			s.mu.Unlock()
			p.kill()
			_ = p.wait()
			return
		}
		s.pool = append(s.pool, p)
		s.signal()
		s.mu.Unlock()
		s.watch(p)
		last = p
	}
}

// sleep waits for d (forever if d < 0), a nudge, Close, or until last
// (if any) is ready or has waited ReadyWait.
func (s *Spawner) sleep(d time.Duration, last *process) {
	var ready <-chan struct{}
	if last != nil {
		ready = last.readyCh
		if r := ReadyWait - time.Since(last.started); d < 0 || r < d {
			d = max(r, 0)
		}
	}
	var timeout <-chan time.Time
	if d >= 0 {
		t := time.NewTimer(d)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-timeout:
	case <-ready:
	case <-s.wake:
	case <-s.stop:
	}
}

// watch replaces a standby that exits while it waits in the pool.
func (s *Spawner) watch(p *process) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		<-p.relay.done
		s.mu.Lock()
		i := slices.Index(s.pool, p)
		if i >= 0 {
			s.pool = slices.Delete(s.pool, i, i+1)
		}
		closed := s.closed
		s.mu.Unlock()
		if i < 0 {
			return // taken by a call, or killed by Close: not ours to reap
		}
		s.failed()
		err := p.wait()
		if !closed {
			s.log.Warn("standby worker exited while waiting; starting another", "pid", p.pid(), "status", exitText(err), "was_ready", p.isReady())
		}
	}()
}

// failed counts a standby that could not start or died unused.
func (s *Spawner) failed() {
	s.mu.Lock()
	s.failures++
	s.failedAt = time.Now()
	s.mu.Unlock()
}

// reapLater waits for p off the caller's path.
func (s *Spawner) reapLater(p *process) {
	s.background.Add(1)
	go func() {
		defer s.background.Done()
		_ = p.wait()
	}()
}

// released frees one process slot.
func (s *Spawner) released() {
	s.mu.Lock()
	s.alive--
	s.signal()
	s.mu.Unlock()
	s.nudge()
}

// process is one started worker waiting for, or running, its request.
type process struct {
	cmd      *exec.Cmd
	stdin    io.WriteCloser
	stdout   io.Reader // what follows the ready byte
	platform platformHandle
	relay    *stderrRelay
	started  time.Time

	// readyCh is closed once the first byte of stdout is in: ReadyByte
	// (ready is then true), or the start of an answer, or the end.
	readyCh chan struct{}
	ready   atomic.Bool
	head    []byte // a first byte that was not ReadyByte
	headErr error  // why stdout ended before its first byte

	// launched is true when the front confined the process before its exec.
	launched bool
	// stopped is set when the spawner kills the process on purpose.
	stopped atomic.Bool
	// standby is true for the filler's starts, false for a call's own.
	standby  bool
	reaped   sync.Once
	reapedCh chan struct{} // closed once the process is reaped
	onReaped func()
}

// start starts one worker; the caller has counted it in s.alive, and its
// reaping counts it out. A standby warms up while it waits; a worker
// started for a call that is waiting does not.
func (s *Spawner) start(standby bool) (*process, error) {
	cmd := exec.Command(s.cfg.Path, s.cfg.Args...)
	cmd.Env = s.cfg.Env
	if standby {
		cmd.Env = append(slices.Clip(s.cfg.Env), EnvWarm+"=1")
	}
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
	p := &process{cmd: cmd, stdin: stdin, started: time.Now(), standby: standby, readyCh: make(chan struct{}), reapedCh: make(chan struct{}), onReaped: s.released}
	if err := s.startProcess(p); err != nil {
		return nil, err
	}
	p.relay = newStderrRelay(stderr, s.log.Named("worker").With("pid", cmd.Process.Pid))
	p.stdout = afterReady{p: p, r: stdout}
	// On Windows the worker is still suspended here: it runs its first
	// instruction inside its Job Object.
	h, err := attachLimits(cmd, s.cfg.MemoryMB)
	if err != nil {
		p.onReaped = nil // the caller frees the slot of a failed start
		p.kill()
		_ = p.wait()
		return nil, fmt.Errorf("apply worker limits: %w", err)
	}
	p.platform = h
	go p.awaitReady(stdout, s)
	return p, nil
}

// startProcess starts p's command: confined by the front from its first
// instruction where it can (Linux), which spares a cgo worker the
// re-execution it needs to confine all its threads itself; else as is.
func (s *Spawner) startProcess(p *process) error {
	if s.confine == nil || !s.launch.Load() {
		return p.cmd.Start()
	}
	_, err := sandbox.StartConfined(p.cmd, *s.confine, p.reapedCh)
	if errors.Is(err, sandbox.ErrUnsupported) {
		s.launch.Store(false)
		return p.cmd.Start()
	}
	if err != nil {
		s.stopLaunching("the server could not confine a worker before it ran: " + err.Error())
		return p.cmd.Start()
	}
	p.launched = true
	return nil
}

// stopLaunching falls back, for good, to workers that confine themselves.
func (s *Spawner) stopLaunching(why string) {
	if s.launch.Swap(false) {
		s.log.Warn("workers will confine themselves (a cgo build re-executes itself to do so): "+why, "worker", s.cfg.Path)
	}
}

// awaitReady reads the first byte the worker writes.
func (p *process) awaitReady(stdout io.Reader, s *Spawner) {
	defer close(p.readyCh)
	var b [1]byte
	n, err := io.ReadFull(stdout, b[:])
	switch {
	case n == 1 && b[0] == ReadyByte:
		if p.launched && s.cfg.MemoryMB > 0 {
			// It cannot read its own /proc entry: the front sets its
			// address-space limit, before any request reaches it.
			if err := limitAddressSpace(p.pid(), s.cfg.MemoryMB); err != nil {
				s.log.Error("could not limit a worker's memory; stopping it", "pid", p.pid(), "error", err)
				p.kill()
				p.headErr = fmt.Errorf("memory limit: %w", err)
				return
			}
		}
		p.ready.Store(true)
		what := "worker ready for its call"
		if p.standby {
			what = "standby worker ready"
		}
		s.log.Debug(what, "pid", p.pid(), "after", time.Since(p.started), "confined_by_front", p.launched)
	case n == 1:
		p.head = b[:]
	default:
		p.headErr = err
		switch {
		case p.stopped.Load() || s.isClosed():
			// Killed by shutdown (or on purpose): not a failure.
			s.log.Debug("worker stopped before it was ready", "pid", p.pid(), "after", time.Since(p.started))
		case p.launched:
			// Most likely the loader could not open a library it was not
			// granted (a worker built unlike its server).
			s.stopLaunching("a worker the server started confined exited before it was ready (most likely it needs a file the sandbox does not grant, such as a shared library of a worker built unlike the server); workers stay sandboxed, each confining itself")
		}
	}
}

// awaitStart waits until a worker started confined by the front is ready
// for its request (or gone, which its request then reports).
func (p *process) awaitStart(ctx context.Context) error {
	timer := time.NewTimer(ReadyWait)
	defer timer.Stop()
	select {
	case <-p.readyCh:
		return nil
	case <-ctx.Done():
		return NewError(CodeCancelled, "the call was cancelled before it ran")
	case <-timer.C:
		return NewError(CodeWorkerFailed, fmt.Sprintf("the worker did not start within %s; the call was not run, try again", ReadyWait))
	}
}

// afterReady is a worker's stdout from its answer on: the ready byte is
// the spawner's.
type afterReady struct {
	p *process
	r io.Reader
}

func (a afterReady) Read(b []byte) (int, error) {
	<-a.p.readyCh
	if len(a.p.head) > 0 {
		n := copy(b, a.p.head)
		a.p.head = a.p.head[n:]
		return n, nil
	}
	if a.p.headErr != nil {
		return 0, a.p.headErr
	}
	return a.r.Read(b)
}

func (p *process) pid() int { return p.cmd.Process.Pid }

func (p *process) isReady() bool { return p.ready.Load() }

// readyDone reports whether the first byte of stdout is in (ready or not).
func (p *process) readyDone() bool {
	select {
	case <-p.readyCh:
		return true
	default:
		return false
	}
}

// exited reports whether the worker is gone: its stderr closes when it exits.
func (p *process) exited() bool {
	select {
	case <-p.relay.done:
		return true
	default:
		return false
	}
}

// kill stops the process; a process killed before it was ready is then
// not counted as a failed start.
func (p *process) kill() {
	p.stopped.Store(true)
	killProcess(p.cmd, p.platform)
}

// isClosed reports whether Close has begun.
func (s *Spawner) isClosed() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.closed
}

// wait reaps the process once its pipes are drained, and frees its slot.
func (p *process) wait() error {
	<-p.relay.done
	err := p.cmd.Wait()
	releaseLimits(p.platform)
	p.reaped.Do(func() {
		close(p.reapedCh)
		if p.onReaped != nil {
			p.onReaped()
		}
	})
	return err
}

type readResult struct {
	resp *Response
	err  error
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

func (p *process) run(ctx context.Context, req *Request, onProgress func(Progress), background *sync.WaitGroup) *Response {
	b := budgetsOf(req)
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
