package ipc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
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
	// Env is the workers' base environment (nil: the front's own).
	Env []string
	// Worker is what every worker is told through its environment, on top
	// of Env; the spawner adds the ready handshake, its pid and MemoryMB.
	// Worker.Sandbox is the allowance a worker is started confined to.
	Worker WorkerEnv
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

	// env and warmEnv are the environments of a worker started for a
	// waiting call and of a standby.
	env, warmEnv []string
	// confine is the sandbox allowance of cfg.Worker, if any; while launch is
	// true, workers are started confined by the front (no re-execution).
	confine *sandbox.Allowance
	launch  atomic.Bool
	// seccomp is true when confined workers install the system call
	// allowlist here: a worker is then handed no request before it is
	// ready and its /proc status shows the filter (frontFilters is the
	// front's own filter count, -1 where the kernel does not say).
	seccomp      bool
	frontFilters int

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
	told := standbyEnv(cfg.Worker, cfg.MemoryMB)
	warm := told
	warm.Warm = true
	s := &Spawner{
		env: told.Env(env), warmEnv: warm.Env(env),
		cfg: cfg, log: cfg.Log,
		changed: make(chan struct{}),
		wake:    make(chan struct{}, 1),
		stop:    make(chan struct{}),
	}
	if a := cfg.Worker.Sandbox; a != nil {
		s.confine = a
		s.launch.Store(true)
		if sandbox.SeccompSupported() == nil {
			if _, n, err := seccompStatus(0); err == nil {
				s.seccomp, s.frontFilters = true, n
			}
		}
	}
	s.background.Add(1)
	go s.fill()
	return s, nil
}

// Run executes req in a worker and returns its response: the worker's
// own, failed or not. A request the worker did not answer (timeout,
// crash, garbage, memory, no worker to run it) is a *RunError instead,
// which says why and leaves the wording to the caller; a request too
// large for a worker is an INVALID_ARGUMENT *errcode.Error, refused
// before any worker. Cancelling ctx kills the worker (its process group)
// at once: RunCancelled, for the client cancelled the call or the server
// is stopping.
func (s *Spawner) Run(ctx context.Context, req *Request) (*Response, error) {
	return s.RunWithProgress(ctx, req, nil)
}

// RunWithProgress is Run that passes each progress frame of the worker to
// onProgress (if not nil), in order, on a goroutine of its own; all calls
// are done before it returns. The memory alert (PhaseMemoryHigh) is kept
// for the RunError and never passed on.
func (s *Spawner) RunWithProgress(ctx context.Context, req *Request, onProgress func(Progress)) (*Response, error) {
	req.Version = Version
	if err := checkRequestSize(req); err != nil {
		return nil, err
	}
	trace := TraceFrom(ctx)
	req.Trace = trace != nil
	p, err := s.acquire(ctx)
	if err != nil {
		return nil, err
	}
	if trace != nil {
		trace.Taken = now()
	}
	defer s.callDone()
	if (p.launched || s.seccomp) && !p.isReady() {
		// Its memory limit is set, and its seccomp filter checked, once it
		// is ready; no request before.
		if err := p.awaitStart(ctx); err != nil {
			p.kill()
			s.reapLater(p)
			return nil, err
		}
	}
	return p.run(ctx, req, onProgress, &s.background)
}

// Prewake tells the standby the next call will take that a request is
// on its way, so that it wakes up and touches again what the request will
// use (the database's pages after other writes, SQLite's and the
// renderer's code and memory) while the front is still parsing the call:
// a paced call otherwise finds a worker that has been idle for a while,
// and pays its wake-up and every cold first touch on the call's path. It
// writes PrewakeByte, which the request's JSON frame may begin with, to
// the standby's stdin; a standby is nudged once. Calling it costs one
// pipe write; a nudged standby that no call takes stays a standby.
func (s *Spawner) Prewake() {
	s.mu.Lock()
	var p *process
	if i := s.nextStandby(); i >= 0 && s.pool[i].isReady() {
		p = s.pool[i]
	}
	s.mu.Unlock()
	if p == nil || !p.prewoken.CompareAndSwap(0, now()) {
		return
	}
	_, _ = p.stdin.Write([]byte{PrewakeByte})
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
			return nil, &RunError{Reason: RunShuttingDown, Phase: PhaseWaiting}
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
			sl := s.takeSlot()
			s.mu.Unlock()
			s.nudge()
			p, err := s.start(false, sl)
			if err != nil {
				s.callDone()
				return nil, &RunError{Reason: RunStartFailed, Phase: PhaseWaiting, Err: err}
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
			return nil, &RunError{Reason: RunCancelled, Phase: PhaseWaiting}
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
	i := s.nextStandby()
	p := s.pool[i]
	s.pool = slices.Delete(s.pool, i, i+1)
	return p
}

// nextStandby is the index in the pool of the standby the next call
// takes (popStandby) and Prewake nudges: the oldest ready one, else the
// oldest; -1 when the pool is empty. Call with s.mu held.
func (s *Spawner) nextStandby() int {
	if len(s.pool) == 0 {
		return -1
	}
	return max(slices.IndexFunc(s.pool, (*process).isReady), 0)
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
		var d fillDecision
		d, s.rush = decideFill(fillState{
			pool: len(s.pool), standby: s.cfg.Standby, alive: s.alive, maxWorkers: s.cfg.MaxWorkers,
			calls: s.calls, rush: s.rush, noneReady: s.noneReady(), lastStarting: last != nil,
			sinceIdle: time.Since(s.idleAt), refillDelay: RefillDelay,
			failures: s.failures, sinceFailure: time.Since(s.failedAt),
		})
		var sl *slot
		if d.start {
			sl = s.takeSlot()
		}
		s.mu.Unlock()
		if !d.start {
			s.sleep(d.wait, last)
			continue
		}
		p, err := s.start(true, sl)
		if err != nil {
			s.failed()
			if s.isClosed() {
				s.log.Debug("standby worker not started: the server is stopping", "error", err)
			} else {
				s.log.Error("could not start a standby worker", "error", err)
			}
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
