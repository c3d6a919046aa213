package ipc

import (
	"bytes"
	"context"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
)

// syncBuffer is a log sink tests can read while the spawner writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// poolSpawner starts a spawner of "pid" helper workers with a debug log.
func poolSpawner(t *testing.T, mode string, maxWorkers, standby int) (*Spawner, *syncBuffer) {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	s, err := NewSpawner(Config{
		Path: self, Args: []string{"-test.run=^$"},
		Env:        append(os.Environ(), helperEnv+"="+mode, "GORACE=atexit_sleep_ms=0"),
		MaxWorkers: maxWorkers, Standby: standby,
		Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s, logs
}

// eventually polls cond for up to 10 s (liveness, not timing).
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("gave up waiting: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// readyPids lists the pool's standbys when all n are ready, else nil.
func (s *Spawner) readyPids(n int) []int {
	s.mu.Lock()
	defer s.mu.Unlock()
	var pids []int
	for _, p := range s.pool {
		if p.isReady() {
			pids = append(pids, p.pid())
		}
	}
	if len(pids) != n {
		return nil
	}
	slices.Sort(pids)
	return pids
}

func (s *Spawner) counts() (pool, alive, calls int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pool), s.alive, s.calls
}

func runPid(t *testing.T, s *Spawner, delayMS int) int {
	t.Helper()
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", Limit: delayMS, Limits: Limits{TimeoutMS: 20_000}})
	if err != nil || !resp.OK {
		t.Errorf("call failed: %+v, %v", resp, err)
		return 0
	}
	pid, _ := strconv.Atoi(resp.Text)
	return pid
}

// TestPoolServesBurst: four calls at once are served by the four standbys
// started before them, and the pool is full again afterwards.
func TestPoolServesBurst(t *testing.T) {
	s, logs := poolSpawner(t, "pid", 4, 4)
	var before []int
	eventually(t, "4 ready standbys", func() bool { before = s.readyPids(4); return before != nil })
	var mu sync.Mutex
	var served []int
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			pid := runPid(t, s, 50)
			mu.Lock()
			served = append(served, pid)
			mu.Unlock()
		})
	}
	wg.Wait()
	slices.Sort(served)
	if !slices.Equal(served, before) {
		t.Fatalf("the burst was served by %v, not by the standbys %v", served, before)
	}
	if strings.Contains(logs.String(), "call started its own worker") {
		t.Fatalf("a call of the burst started a worker:\n%s", logs)
	}
	eventually(t, "the pool refilled", func() bool { return s.readyPids(4) != nil })
}

// TestPoolNoRefillDuringCall: while a call runs and standbys are left, no
// replacement starts; once it is over, one does.
func TestPoolNoRefillDuringCall(t *testing.T) {
	s, _ := poolSpawner(t, "pid", 4, 2)
	eventually(t, "2 ready standbys", func() bool { return s.readyPids(2) != nil })
	done := make(chan struct{})
	go func() { defer close(done); runPid(t, s, 400) }()
	eventually(t, "the call running", func() bool { _, _, calls := s.counts(); return calls == 1 })
	for {
		select {
		case <-done:
			eventually(t, "the pool refilled after the call", func() bool { return s.readyPids(2) != nil })
			return
		default:
		}
		if pool, alive, calls := s.counts(); calls == 1 && (pool != 1 || alive != 2) {
			t.Fatalf("a replacement started during the call: pool %d, alive %d", pool, alive)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// TestPoolEmptyRefillsAtOnce: when a call takes the last standby, the next
// one starts while the call still runs.
func TestPoolEmptyRefillsAtOnce(t *testing.T) {
	s, _ := poolSpawner(t, "pid", 2, 1)
	eventually(t, "1 ready standby", func() bool { return s.readyPids(1) != nil })
	done := make(chan struct{})
	go func() { defer close(done); runPid(t, s, 1000) }()
	eventually(t, "a replacement started during the call", func() bool {
		pool, alive, calls := s.counts()
		return calls == 1 && pool == 1 && alive == 2
	})
	<-done
}

// TestPoolEmptyRefillsInParallel: when calls have taken every standby, the
// replacements start together while the calls run (a stream of calls is
// bound by process starts), up to the pool's size.
func TestPoolEmptyRefillsInParallel(t *testing.T) {
	s, _ := poolSpawner(t, "pid", 6, 3)
	eventually(t, "3 ready standbys", func() bool { return s.readyPids(3) != nil })
	// Calls that last until the replacements are seen (process starts are
	// slow under Wine), then are cancelled.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			_, _ = s.Run(ctx, &Request{Op: OpQuery, DB: "x.db", Limit: 60_000, Limits: Limits{TimeoutMS: 120_000}})
		})
	}
	eventually(t, "3 replacements started during the calls", func() bool {
		pool, alive, calls := s.counts()
		return calls == 3 && pool == 3 && alive == 6
	})
	cancel()
	wg.Wait()
}

// TestPoolReplacesDeadStandby: a standby killed while it waits is replaced
// and the log says so.
func TestPoolReplacesDeadStandby(t *testing.T) {
	s, logs := poolSpawner(t, "pid", 2, 2)
	var before []int
	eventually(t, "2 ready standbys", func() bool { before = s.readyPids(2); return before != nil })
	s.mu.Lock()
	victim := s.pool[0]
	s.mu.Unlock()
	victim.kill()
	eventually(t, "a replacement", func() bool {
		now := s.readyPids(2)
		return now != nil && !slices.Contains(now, victim.pid())
	})
	if !strings.Contains(logs.String(), "standby worker exited while waiting; starting another") {
		t.Fatalf("no log line for the dead standby:\n%s", logs)
	}
	if pid := runPid(t, s, 0); pid == 0 || pid == victim.pid() {
		t.Fatalf("served by %d", pid)
	}
}

// TestPoolCrashingStandbysBackOff: standbys that die as soon as they are
// ready are replaced, but not in a tight loop, and calls still get an
// answer from a worker of their own.
func TestPoolCrashingStandbysBackOff(t *testing.T) {
	s, logs := poolSpawner(t, "dieready", 2, 1)
	time.Sleep(500 * time.Millisecond)
	if n := strings.Count(logs.String(), "exited while waiting"); n == 0 || n > 20 {
		t.Fatalf("%d standby deaths logged in 0.5 s; want a few (backoff)", n)
	}
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", Limits: Limits{TimeoutMS: 20_000}})
	wantRunError(t, resp, err, RunNoAnswer, PhaseStatement, errcode.WorkerFailed)
}

// TestPoolMaxWorkersBound: however many calls come at once, no more than
// MaxWorkers processes are alive, standbys included, and every call is
// answered.
func TestPoolMaxWorkersBound(t *testing.T) {
	s, _ := poolSpawner(t, "pid", 2, 2)
	stop := make(chan struct{})
	watched := make(chan int)
	go func() {
		most := 0
		for {
			select {
			case <-stop:
				watched <- most
				return
			default:
			}
			_, alive, _ := s.counts()
			most = max(most, alive)
			time.Sleep(time.Millisecond)
		}
	}()
	var wg sync.WaitGroup
	for range 6 {
		wg.Go(func() { runPid(t, s, 30) })
	}
	wg.Wait()
	close(stop)
	if most := <-watched; most > 2 {
		t.Fatalf("%d workers alive at once; --max-workers is 2", most)
	}
}

// TestPoolWithoutReadyByte: a worker that never says it is ready (an older
// or foreign --worker) still serves calls.
func TestPoolWithoutReadyByte(t *testing.T) {
	old := ReadyWait
	ReadyWait = 50 * time.Millisecond
	t.Cleanup(func() { ReadyWait = old })
	s, _ := poolSpawner(t, "noready", 2, 2)
	eventually(t, "2 standbys", func() bool { pool, _, _ := s.counts(); return pool == 2 })
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", SQL: "SELECT 1", Limits: Limits{TimeoutMS: 20_000}})
	if err != nil || !resp.OK || resp.Text != "echo: SELECT 1" {
		t.Fatalf("got %+v, %v", resp, err)
	}
}

// TestPoolCloseKillsStandbys: Close leaves no worker behind.
func TestPoolCloseKillsStandbys(t *testing.T) {
	s, _ := poolSpawner(t, "pid", 3, 3)
	eventually(t, "3 ready standbys", func() bool { return s.readyPids(3) != nil })
	s.Close()
	if pool, alive, _ := s.counts(); pool != 0 || alive != 0 {
		t.Fatalf("after Close: pool %d, alive %d", pool, alive)
	}
	resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db"})
	wantRunError(t, resp, err, RunShuttingDown, PhaseWaiting, errcode.WorkerFailed)
}

// TestPoolMissingBinary: a worker binary that cannot start fails the call
// with a clear error, and the spawner neither spins nor leaks a slot.
func TestPoolMissingBinary(t *testing.T) {
	logs := &syncBuffer{}
	s, err := NewSpawner(Config{
		Path: "/nonexistent/mcp-sqlite-memory-worker", MaxWorkers: 2, Standby: 2,
		Log: hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Debug}),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	for range 3 {
		resp, err := s.Run(context.Background(), &Request{Op: OpQuery, DB: "x.db", Limits: Limits{TimeoutMS: 1000}})
		if re := wantRunError(t, resp, err, RunStartFailed, PhaseWaiting, errcode.WorkerFailed); re.Err == nil {
			t.Fatalf("%v: no start error", re)
		}
	}
	time.Sleep(300 * time.Millisecond)
	if n := strings.Count(logs.String(), "could not start a standby worker"); n == 0 || n > 10 {
		t.Fatalf("%d failed standby starts logged in 0.3 s; want a few (backoff)", n)
	}
	// The filler keeps retrying with a backoff, and a retry holds a slot
	// for the few milliseconds its start takes: the slot must come back.
	eventually(t, "no slot held after failed starts", func() bool {
		_, alive, calls := s.counts()
		return alive == 0 && calls == 0
	})
}
