package ipc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"sync"
	"sync/atomic"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// A worker process from its start to its reaping, and the slot it holds.

// slot is one of the MaxWorkers a process may hold. It is taken before
// the process starts and released once: when the process is reaped, or by
// start when it fails.
type slot struct {
	s    *Spawner
	once sync.Once
}

// takeSlot counts a process in. Call with s.mu held.
func (s *Spawner) takeSlot() *slot {
	s.alive++
	return &slot{s: s}
}

// release frees the slot; calls after the first do nothing.
func (sl *slot) release() {
	sl.once.Do(func() {
		s := sl.s
		s.mu.Lock()
		s.alive--
		s.signal()
		s.mu.Unlock()
		s.nudge()
	})
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
	// prewoken is when Prewake nudged the process (0: never).
	prewoken atomic.Int64
	// standby is true for the filler's starts, false for a call's own.
	standby  bool
	reaped   sync.Once
	reapedCh chan struct{} // closed once the process is reaped
	slot     *slot         // released when the process is reaped
}

// start starts one worker in sl, which the process holds until it is
// reaped; a failed start releases sl. A standby warms up while it waits; a
// worker started for a call that is waiting does not.
func (s *Spawner) start(standby bool, sl *slot) (p *process, err error) {
	defer func() {
		if err != nil {
			sl.release()
		}
	}()
	cmd := exec.Command(s.cfg.Path, s.cfg.Args...)
	cmd.Env = s.env
	if standby {
		cmd.Env = s.warmEnv
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
	p = &process{cmd: cmd, stdin: stdin, started: time.Now(), standby: standby, readyCh: make(chan struct{}), reapedCh: make(chan struct{}), slot: sl}
	if err := s.startProcess(p); err != nil {
		return nil, err
	}
	p.relay = newStderrRelay(stderr, s.log.Named("worker").With("pid", cmd.Process.Pid))
	p.stdout = afterReady{p: p, r: stdout}
	holdForTest(cmd.Process.Pid)
	// On Windows the worker is still suspended here: it runs its first
	// instruction inside its Job Object.
	h, err := attachLimits(cmd, p.platform, s.cfg.MemoryMB)
	if err != nil {
		p.kill()
		_ = p.wait() // releases the slot
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
		return s.startPlain(p)
	}
	_, err := sandbox.StartConfined(p.cmd, *s.confine, p.reapedCh)
	if errors.Is(err, sandbox.ErrUnsupported) {
		s.launch.Store(false)
		return s.startPlain(p)
	}
	if err != nil {
		s.stopLaunching("the server could not confine a worker before it ran: " + err.Error())
		return s.startPlain(p)
	}
	p.launched = true
	return nil
}

// startPlain starts p's command as the platform starts a worker (on
// Windows inside its Job Object, suspended).
func (s *Spawner) startPlain(p *process) error {
	h, err := startCommand(p.cmd, s.cfg.MemoryMB, s.log)
	p.platform = h
	return err
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
		if s.seccomp {
			if err := checkSeccomp(p.pid(), s.frontFilters); err != nil {
				if !p.stopped.Load() && !s.isClosed() {
					s.log.Error("a worker without its seccomp filter may not serve; stopping it", "pid", p.pid(), "error", err)
				}
				p.kill()
				p.headErr = fmt.Errorf("seccomp: %w", err)
				return
			}
		}
		if p.launched && s.cfg.MemoryMB > 0 {
			// It cannot read its own /proc entry: the front sets its
			// address-space limit, before any request reaches it.
			if err := limitAddressSpace(p.pid(), s.cfg.MemoryMB); err != nil {
				if p.stopped.Load() || s.isClosed() {
					// Killed by shutdown between its ready byte and its
					// limit: a zombie has no VmSize. Not a failure.
					s.log.Debug("worker stopped before its memory limit was set", "pid", p.pid(), "error", err)
				} else {
					s.log.Error("could not limit a worker's memory; stopping it", "pid", p.pid(), "error", err)
				}
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
// for its request (or gone, which its request then reports); a *RunError
// if the call is cancelled or the worker is not ready within ReadyWait.
func (p *process) awaitStart(ctx context.Context) error {
	timer := time.NewTimer(ReadyWait)
	defer timer.Stop()
	select {
	case <-p.readyCh:
		return nil
	case <-ctx.Done():
		return &RunError{Reason: RunCancelled, Phase: PhaseWaiting}
	case <-timer.C:
		return &RunError{Reason: RunNotStarted, Phase: PhaseWaiting, Budget: ReadyWait}
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
		p.slot.release()
	})
	return err
}
