package tests

import (
	"bytes"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// Tests of the standby pool and of the worker binary the server picks.

// count returns how many log lines contain all of parts.
func (b *lockedBuffer) count(parts ...string) int {
	n := 0
	for _, line := range strings.Split(b.String(), "\n") {
		all := true
		for _, p := range parts {
			all = all && strings.Contains(line, p)
		}
		if all {
			n++
		}
	}
	return n
}

// startLogged is start with a choice of server binary and its stderr kept.
func startLogged(t *testing.T, bin, db string, flags ...string) (*session, *lockedBuffer) {
	t.Helper()
	return startCommand(t, db, bin, append([]string{"--db", db}, flags...)...)
}

// startCommand starts a server on db by running command with args (a
// tracer in front of the server, say), keeping its stderr.
func startCommand(t *testing.T, db, command string, args ...string) (*session, *lockedBuffer) {
	t.Helper()
	logs := &lockedBuffer{}
	var cmd *exec.Cmd
	c, err := client.NewStdioMCPClientWithOptions(command, nil, args, transport.WithCommandStderrWriter(logs), trackServer(db, &cmd))
	if err != nil {
		t.Fatalf("start server: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	s := &session{t: t, c: c, db: db, cmd: cmd}
	if command == serverBin || command == aloneServerBin {
		// The lock guard needs the server's own process, not a tracer's.
		s.guardLocks()
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "e2e", Version: "1"}
	if _, err := c.Initialize(ctx, init); err != nil {
		t.Fatalf("initialize: %v\n%s", err, logs)
	}
	return s, logs
}

// waitFor polls cond for up to 10 s: a liveness bound, not a timing.
func mustWaitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	if !waitFor(10*time.Second, cond) {
		t.Fatalf("gave up waiting for %s", what)
	}
}

// TestWorkerBinaryChoice: with mcp-sqlite-memory-worker beside it the
// server runs that lean binary, else itself with "worker", and --worker
// wins over both; the log says once which one it uses, and calls work.
func TestWorkerBinaryChoice(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		bin        string
		flags      []string
		wantLog    string
		wantWorker []string // the worker's command line
	}{
		{"lean worker beside the server", serverBin, nil, `worker=` + workerBin + ` from="beside the server"`, []string{workerBin}},
		{"server alone re-runs itself", aloneServerBin, nil, `worker="` + aloneServerBin + ` worker" from="this binary`, []string{aloneServerBin, "worker"}},
		{"--worker wins", aloneServerBin, []string{"--worker", workerBin}, `worker=` + workerBin + ` from=--worker`, []string{workerBin}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			s, logs := startLogged(t, tt.bin, db, tt.flags...)
			if got := s.ok("read_query", q("SELECT 40 + 2 AS answer")); got != "answer\n42\n# 1 rows" {
				t.Fatalf("call: %q", got)
			}
			if n := logs.count("workers run:"); n != 1 {
				t.Fatalf("%d log lines name the worker, want 1:\n%s", n, logs)
			}
			if logs.count(tt.wantLog) != 1 {
				t.Fatalf("the log does not say %q:\n%s", tt.wantLog, logs)
			}
			if runtime.GOOS != "linux" {
				return
			}
			server := serverOf(tt.bin, db)
			// A worker that has just answered may be exiting, with no
			// command line left to read (or an empty one: seen beside two
			// CPU burners): wait for a live one.
			var args []string
			mustWaitFor(t, "a standby worker", func() bool {
				for _, pid := range workersOfServer(server) {
					if args, _ = procArgs(pid); len(args) > 0 && args[0] != "" {
						return true
					}
				}
				return false
			})
			if !slices.Equal(args, tt.wantWorker) {
				t.Fatalf("worker command line %q, want %q", args, tt.wantWorker)
			}
		})
	}
}

// TestPoolServesBurst: four parallel calls (what MCP hosts send) are served
// by the four standby workers started before them; none starts a process
// on its call path, and every call is audited.
func TestPoolServesBurst(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, logs := startLogged(t, serverBin, db, "-v")
	s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
	s.ok("write_query", q("INSERT INTO t VALUES (1, 'a'), (2, 'b'), (3, 'c'), (4, 'd')"))
	// The pool refills after those calls: wait for four ready standbys
	// beyond the ones they used. Count the used ones only once both calls'
	// lines are in: the log comes through a pipe and may trail the answers
	// (beside two CPU burners the INSERT's line came late, its standby was
	// counted as free, and the burst found three).
	mustWaitFor(t, "the log lines of the two calls", func() bool {
		return logs.count("call served by a standby worker")+logs.count("call started its own worker") >= 2
	})
	used := logs.count("call served by a standby worker")
	mustWaitFor(t, "four ready standbys", func() bool {
		return logs.count("standby worker ready") >= 4+used
	})
	before := logs.count("call served by a standby worker", "ready=true")
	// The first calls may come before the first standby exists.
	ownBefore := logs.count("call started its own worker")
	var wg sync.WaitGroup
	for i := 1; i <= 4; i++ {
		wg.Go(func() {
			got := s.ok("read_query", q("SELECT v FROM t WHERE id = "+strconv.Itoa(i)))
			if !strings.HasPrefix(got, "v\n") || !strings.HasSuffix(got, "\n# 1 rows") {
				t.Errorf("call %d: %q", i, got)
			}
		})
	}
	wg.Wait()
	// The server's log reaches the buffer through a pipe: on a loaded
	// machine the calls' lines (each says which worker served it) may
	// come after their answers.
	waitFor(10*time.Second, func() bool {
		return logs.count("call served by a standby worker")-used+logs.count("call started its own worker")-ownBefore >= 4
	})
	if served := logs.count("call served by a standby worker", "ready=true") - before; served < 4 {
		t.Fatalf("%d of the 4 parallel calls were served by a ready standby:\n%s", served, logs)
	}
	if n := logs.count("call started its own worker") - ownBefore; n != 0 {
		t.Fatalf("%d calls started a worker on their call path:\n%s", n, logs)
	}
	s.audited(db)
	if all, _ := auditRows(t, db); all != 6 {
		t.Fatalf("%d audit rows, want 6", all)
	}
}

// TestStreamRefillsThePoolAtOnce: when calls have taken every standby,
// the server starts all the replacements together while the calls still
// run (a stream of back-to-back calls is bound by worker starts), not one
// at a time.
func TestStreamRefillsThePoolAtOnce(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, logs := startLogged(t, serverBin, db, "-v", "--max-workers", "6", "--standby-workers", "3", "--query-timeout", "3")
	s.ok("verify_chain", nil)
	mustWaitFor(t, "three ready standbys", func() bool { return logs.count("standby worker ready") >= 3 })
	var wg sync.WaitGroup
	for range 3 {
		wg.Go(func() {
			if text, isErr := s.call("read_query", q(runaway)); !isErr || !strings.HasPrefix(text, "TIMEOUT") {
				t.Errorf("runaway read: %q", text)
			}
		})
	}
	// Three calls running, each on a former standby, and three new ones.
	if !waitFor(2500*time.Millisecond, func() bool { return len(workersOf(db)) == 6 }) {
		t.Errorf("workers while the calls run: %v, want 6", workersOf(db))
	}
	wg.Wait()
}

// TestStandbyConfinedAndLimitedWhileWaiting: a standby worker has its
// sandbox and its limits before any request reaches it, and the statement
// it then runs has the whole --worker-memory-mb of address space, however
// much the standby mapped while it waited (under load, the runtime's new
// threads).
func TestStandbyConfinedAndLimitedWhileWaiting(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("reads Landlock's and rlimit's marks in /proc; on Windows TestStandbyInAJobWhileWaiting checks the Job Object")
	}
	t.Parallel()
	db := newDB(t)
	s, _ := startLogged(t, serverBin, db, "--worker-memory-mb", "200", "--query-timeout", "4")
	server := serverOf(serverBin, db)
	var workers []int
	mustWaitFor(t, "4 standbys", func() bool { workers = workersOfServer(server); return len(workers) == 4 })
	waiting := map[int]uint64{} // each standby's RLIMIT_AS while it waits
	for _, pid := range workers {
		// Ready means limited: poll until this one is.
		mustWaitFor(t, "the standby's limits", func() bool {
			limits, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "limits"))
			return !strings.Contains(string(limits), "Max address space         unlimited")
		})
		if got := procStatus(pid, "NoNewPrivs"); got != "1" {
			t.Errorf("standby %d: NoNewPrivs %q", pid, got)
		}
		// Ready means filtered too (SPEC 7): the seccomp allowlist is on.
		if sandbox.SeccompSupported() == nil {
			if got := procStatus(pid, "Seccomp"); got != "2" {
				t.Errorf("standby %d: Seccomp %q, want 2", pid, got)
			}
		}
		limits, _ := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "limits"))
		for _, want := range []string{"Max core file size        0", "Max open files            64"} {
			if !strings.Contains(string(limits), want) {
				t.Errorf("standby %d: no %q in\n%s", pid, want, limits)
			}
		}
		// While it waits, the budget plus the margin for what the runtime
		// maps after it is ready.
		as, vm := addressSpace(pid)
		waiting[pid] = as
		if headroom := int64(as) - int64(vm); headroom > (200+ipc.AddressSpaceMarginMB)<<20 {
			t.Errorf("standby %d: RLIMIT_AS %d with VmSize %d leaves %d MiB, want at most %d", pid, as, vm, headroom>>20, 200+ipc.AddressSpaceMarginMB)
		}
	}
	// The statement's worker: a standby whose limit was settled.
	done := make(chan string, 1)
	go func() {
		text, _ := s.call("read_query", q(runaway))
		done <- text
	}()
	var pid int
	var as, vm uint64
	mustWaitFor(t, "a standby running the statement with its limit settled", func() bool {
		for p, before := range waiting {
			if a, v := addressSpace(p); a != 0 && a != before {
				pid, as, vm = p, a, v
				return true
			}
		}
		return false
	})
	// What the statement has: the budget, less what it used so far (a
	// counting loop: little; a thread the runtime starts: 8 MiB).
	if headroom := int64(as) - int64(vm); headroom < 150<<20 || headroom > 200<<20 {
		t.Errorf("worker %d running the statement: RLIMIT_AS %d with VmSize %d leaves %d MiB, want about 200", pid, as, vm, headroom>>20)
	}
	if text := <-done; !strings.HasPrefix(text, "TIMEOUT") {
		t.Errorf("runaway read: %q", text)
	}
	if got := s.ok("read_query", q("SELECT 1 AS one")); got != "one\n1\n# 1 rows" {
		t.Fatalf("call: %q", got)
	}
}

// addressSpace is a process's RLIMIT_AS and its mapped size (VmSize), in
// bytes; 0, 0 once it is gone.
func addressSpace(pid int) (limit, mapped uint64) {
	limits, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "limits"))
	if err != nil {
		return 0, 0
	}
	for _, line := range strings.Split(string(limits), "\n") {
		if rest, ok := strings.CutPrefix(line, "Max address space"); ok {
			limit, _ = strconv.ParseUint(strings.Fields(rest)[0], 10, 64)
		}
	}
	kb, _ := strconv.ParseUint(strings.TrimSuffix(procStatus(pid, "VmSize"), " kB"), 10, 64)
	return limit, kb << 10
}

// TestStandbyKilledIsReplaced: a standby that dies while it waits is
// replaced, the log says so, and calls go on.
func TestStandbyKilledIsReplaced(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, logs := startLogged(t, serverBin, db)
	server := serverOf(serverBin, db)
	var before []int
	mustWaitFor(t, "4 standbys", func() bool { before = workersOfServer(server); return len(before) == 4 })
	victim := before[0]
	if p, err := os.FindProcess(victim); err != nil || p.Kill() != nil {
		t.Fatalf("kill standby %d: %v", victim, err)
	}
	mustWaitFor(t, "a replacement", func() bool {
		now := workersOfServer(server)
		return len(now) == 4 && !slices.Contains(now, victim)
	})
	if !waitFor(10*time.Second, func() bool {
		return logs.count("standby worker exited while waiting; starting another", "pid="+strconv.Itoa(victim)) == 1
	}) {
		t.Fatalf("no log line for the killed standby %d; the log ends:\n%s", victim, tail(logs.String(), 2000))
	}
	if got := s.ok("read_query", q("SELECT 2 AS two")); got != "two\n2\n# 1 rows" {
		t.Fatalf("call after the kill: %q", got)
	}
}

// TestNoWorkerOutlivesFront: the standbys die with their front when it
// exits (stdin closed); when it is killed, so does a worker in the middle
// of a long statement, which reads nothing and can die only by Pdeathsig.
func TestNoWorkerOutlivesFront(t *testing.T) {
	t.Parallel()
	for _, how := range []string{"stdin closed", "SIGKILL"} {
		t.Run(how, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			c := startRaw(t, db, "--query-timeout", "60")
			cmd := c.cmd
			var workers []int
			mustWaitFor(t, "4 standbys", func() bool { workers = workersOfServer(cmd.Process.Pid); return len(workers) == 4 })
			if how == "SIGKILL" {
				runaway := `{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"read_query","arguments":{"query":"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}}}`
				if runtime.GOOS == "linux" {
					// Standbys idle first, so that a running worker below is
					// the one running the statement (no refill starts while
					// it runs).
					mustWaitFor(t, "idle standbys", func() bool {
						return !slices.ContainsFunc(workersOfServer(cmd.Process.Pid), running)
					})
					c.send(runaway)
					mustWaitFor(t, "a worker running the statement", func() bool {
						return slices.ContainsFunc(workersOfServer(cmd.Process.Pid), running)
					})
				} else {
					// Windows shows no thread states here; the statement
					// runs for --query-timeout 60, so a second in it is
					// inside it.
					c.send(runaway)
					time.Sleep(time.Second)
				}
				workers = workersOfServer(cmd.Process.Pid)
				_ = cmd.Process.Kill()
			} else {
				c.in.Close()
			}
			_ = c.wait()
			mustWaitFor(t, "every worker to die", func() bool {
				for _, pid := range workers {
					if alive(pid) {
						return false
					}
				}
				return true
			})
		})
	}
}

// TestNoWorkerOutsideItsJob: a server killed right after it created a
// worker, before that worker ran, leaves no worker behind. The server is
// held at that point by MCP_SQLITE_TEST_HOLD_SPAWN (ipc/testhold.go, built
// only with -tags testhold, as TestMain builds the server). On
// Windows this is the moment a worker created outside its Job Object
// would outlive its server, suspended for good; a worker created inside
// it (PROC_THREAD_ATTRIBUTE_JOB_LIST) dies with the job's last handle. On
// Linux the kernel's Pdeathsig ends it.
func TestNoWorkerOutsideItsJob(t *testing.T) {
	t.Parallel()
	if tags := buildTags(t, serverBin); !slices.Contains(strings.Split(tags, ","), "testhold") {
		t.Fatalf("%s was built with tags %q, without testhold: it has no hold (build it with -tags %s, as TestMain does)", serverBin, tags, testTags)
	}
	dir := testDir(t)
	hold := filepath.Join(dir, "held-workers")
	cmd := exec.Command(serverBin, "-v", "--db", filepath.Join(dir, "memory.db"))
	cmd.Env = append(os.Environ(), "MCP_SQLITE_TEST_HOLD_SPAWN="+hold)
	var logs lockedBuffer
	cmd.Stderr = &logs
	srv := pipeServer(t, cmd)
	var held []int
	if !waitFor(20*time.Second, func() bool {
		held = heldWorkers(t, hold)
		return len(held) > 0
	}) {
		_ = cmd.Process.Kill()
		_ = srv.wait()
		t.Fatalf("the server held no worker; its log:\n%s", tail(logs.String(), 2000))
	}
	if !alive(held[0]) {
		t.Fatalf("held worker %d is not alive before the kill", held[0])
	}
	_ = cmd.Process.Kill()
	_ = srv.wait()
	held = heldWorkers(t, hold) // any other start that reached the hold
	if !waitFor(10*time.Second, func() bool { return !slices.ContainsFunc(held, alive) }) {
		left := slices.DeleteFunc(slices.Clone(held), func(pid int) bool { return !alive(pid) })
		for _, pid := range left {
			if p, err := os.FindProcess(pid); err == nil {
				_ = p.Kill()
			}
		}
		t.Fatalf("workers %v outlived their killed server; its log:\n%s", left, tail(logs.String(), 2000))
	}
	if runtime.GOOS == "windows" && !strings.Contains(logs.String(), "workers are created inside their Job Object") {
		t.Errorf("the server did not say it creates workers inside their Job Object; its log:\n%s", tail(logs.String(), 2000))
	}
}

// buildTags returns the -tags a Go binary was built with ("" for none).
func buildTags(t *testing.T, bin string) string {
	t.Helper()
	info, err := buildinfo.ReadFile(bin)
	if err != nil {
		t.Fatalf("read the build information of %s: %v", bin, err)
	}
	for _, s := range info.Settings {
		if s.Key == "-tags" {
			return s.Value
		}
	}
	return ""
}

// heldWorkers reads the pids TestNoWorkerOutsideItsJob's server wrote.
func heldWorkers(t *testing.T, path string) []int {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil
	}
	var pids []int
	for _, line := range strings.Fields(string(data)) {
		pid, err := strconv.Atoi(line)
		if err != nil {
			t.Fatalf("%s: %q is not a pid", path, line)
		}
		pids = append(pids, pid)
	}
	return pids
}

// TestWorkerConfinedByFront runs the sandbox probe the way the server
// starts its workers on Linux: confined by the front before its exec, with
// no re-execution. It may use its database and nothing else.
func TestWorkerConfinedByFront(t *testing.T) {
	t.Parallel() // its probe builds overlap the other tests
	if runtime.GOOS != "linux" {
		t.Skip("Landlock is Linux only")
	}
	abi, err := sandbox.Supported()
	if err != nil {
		t.Skip(err)
	}
	dir := testDir(t)
	db := filepath.Join(dir, "memory.db")
	start(t, db).ok("verify_chain", nil)
	neighbour := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(neighbour, []byte("private"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		attempt probeAttempt
		want    string
	}{
		{probeAttempt{"read", db}, "ok"},
		{probeAttempt{"write", db}, "ok"},
		{probeAttempt{"write", db + "-wal"}, "ok"},
		{probeAttempt{"read", neighbour}, "denied"},
		{probeAttempt{"create", filepath.Join(dir, "new.db")}, "denied"},
		{probeAttempt{"read", "/etc/passwd"}, "denied"},
		{probeAttempt{"read", "/proc/" + strconv.Itoa(os.Getpid()) + "/environ"}, "denied"},
		{probeAttempt{"exec", "/bin/sh"}, "denied"},
	}
	var attempts []probeAttempt
	for _, c := range cases {
		attempts = append(attempts, c.attempt)
	}
	a := sandbox.Allowance{DB: db}
	for name, bin := range probeBinaries(t) {
		t.Run(name, func(t *testing.T) {
			in, _ := json.Marshal(attempts)
			cmd := exec.Command(bin)
			cmd.Env = append(os.Environ(), a.Env())
			cmd.Stdin = bytes.NewReader(in)
			var out, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &out, &stderr
			reaped := make(chan struct{})
			if _, err := sandbox.StartConfined(cmd, a, reaped); err != nil {
				t.Fatal(err)
			}
			err := cmd.Wait()
			close(reaped)
			if err != nil {
				t.Fatalf("probe: %v\n%s", err, stderr.String())
			}
			var res probeResult
			if err := json.Unmarshal(out.Bytes(), &res); err != nil {
				t.Fatalf("probe answer %q: %v", out.String(), err)
			}
			if !res.Confined || !res.Report.Launched || res.Report.Reexec || !res.Report.NoNewPrivs || !res.Report.Landlock || res.Report.ABI != abi {
				t.Fatalf("probe report %+v", res.Report)
			}
			for i, o := range res.Outcomes {
				if o.Result != cases[i].want {
					t.Errorf("%s %s: %s, want %s", o.Op, o.Target, o.Result, cases[i].want)
				}
			}
		})
	}
}
