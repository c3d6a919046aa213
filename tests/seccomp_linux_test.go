package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// TestSandboxSyscalls runs the probe worker with the environment the
// server gives its workers, confined as in production, and has it install
// its seccomp filter as a standby does before its request: then no socket
// (UDP to 127.0.0.1, which Landlock alone lets through, nor AF_UNIX), no
// io_uring, no bpf, and execve or ptrace kill it (SIGSYS). The same
// attempts unconfined, and UDP under Landlock alone, succeed or reach the
// kernel, so each refusal is the filter's. Both builds are probed.
func TestSandboxSyscalls(t *testing.T) {
	t.Parallel()
	if err := sandbox.SeccompSupported(); err != nil {
		t.Skip(err) // .ci/run's kernels have seccomp
	}
	bins := probeBinaries(t)
	db := newDB(t)
	s := start(t, db)
	env := workerEnvOf(t, s)
	free := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, sandbox.EnvAllowance+"=") })

	udp, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	target := udp.LocalAddr().String()
	datagrams := func() int {
		n := 0
		buf := make([]byte, 16)
		for {
			_ = udp.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
			if _, _, err := udp.ReadFrom(buf); err != nil {
				return n
			}
			n++
		}
	}
	calls := []struct {
		attempt  probeAttempt
		open     string // unconfined ("": whatever the host's sysctls say)
		filtered string
	}{
		{probeAttempt{"udp", target}, "ok", "denied"},
		{probeAttempt{"unix", ""}, "ok", "denied"},
		{probeAttempt{"io_uring_setup", ""}, "", "denied"},
		{probeAttempt{"bpf", ""}, "EINVAL", "denied"},
	}
	var attempts []probeAttempt
	for _, c := range calls {
		attempts = append(attempts, c.attempt)
	}
	for name, bin := range bins {
		t.Run(name, func(t *testing.T) {
			for i, o := range runProbe(t, bin, free, attempts).Outcomes {
				if want := calls[i].open; want != "" && o.Result != want || o.Result == calls[i].filtered {
					t.Fatalf("unconfined probe: %s: %s, want %q (and not %s)", o.Op, o.Result, want, calls[i].filtered)
				}
			}
			if datagrams() == 0 {
				t.Fatal("the unconfined probe's datagram did not arrive")
			}
			// Landlock and no_new_privs alone: UDP still goes out.
			res := runProbe(t, bin, env, []probeAttempt{{"udp", target}})
			if !res.Report.Landlock || res.Report.Seccomp || res.Outcomes[0].Result != "ok" || datagrams() == 0 {
				t.Fatalf("UDP under Landlock alone: %+v, report %+v", res.Outcomes, res.Report)
			}
			res = runProbe(t, bin, env, append([]probeAttempt{{"seccomp", ""}}, attempts...))
			if res.Outcomes[0].Result != "ok" {
				t.Fatalf("the probe could not install its filter: %s", res.Outcomes[0].Result)
			}
			for i, o := range res.Outcomes[1:] {
				if o.Result != calls[i].filtered {
					t.Errorf("filtered probe: %s: %s, want %s", o.Op, o.Result, calls[i].filtered)
				}
			}
			if n := datagrams(); n != 0 {
				t.Errorf("%d datagrams came from the filtered probe", n)
			}
			// execve and ptrace end the process: nothing is answered.
			for _, a := range []probeAttempt{{"execve", "/nonexistent/program"}, {"ptrace", ""}} {
				if o := runProbe(t, bin, free, []probeAttempt{a}).Outcomes[0]; o.Result == "ok" || o.Result == "denied" {
					t.Fatalf("unconfined %s: %s, want the kernel's own error", a.Op, o.Result)
				}
				in, _ := json.Marshal([]probeAttempt{{"seccomp", ""}, a})
				cmd := exec.Command(bin)
				cmd.Env, cmd.Stdin = env, bytes.NewReader(in)
				out, err := cmd.Output()
				var exit *exec.ExitError
				if !errors.As(err, &exit) || !exit.Sys().(syscall.WaitStatus).Signaled() || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGSYS {
					t.Errorf("filtered %s: %v (output %q), want death by SIGSYS", a.Op, err, out)
				}
			}
		})
	}
}

// TestStandbyWithoutSeccompDoesNotServe: a worker that confines itself
// with Landlock but installs no seccomp filter (the probe binary playing a
// worker older than its server) says it is ready; the server reads its
// /proc status, stops it and serves nothing through it.
func TestStandbyWithoutSeccompDoesNotServe(t *testing.T) {
	t.Parallel()
	if err := sandbox.SeccompSupported(); err != nil {
		t.Skip(err)
	}
	bin := probeBinaries(t)["nocgo"]
	db := newDB(t)
	s, logs := startCommand(t, db, "/usr/bin/env", "MCP_SQLITE_PROBE_AS_WORKER=no-seccomp", serverBin, "--db", db, "--worker", bin, "--standby-workers", "1")
	text, isErr := s.call("read_query", q("SELECT 1 AS one"))
	if !isErr || !strings.HasPrefix(text, "WORKER_FAILED") {
		t.Errorf("a call through workers without the filter: (error=%v) %q, want WORKER_FAILED", isErr, text)
	}
	mustWaitFor(t, "the server's refusal in its log", func() bool {
		return strings.Contains(logs.String(), "a worker without its seccomp filter may not serve")
	})
	if !strings.Contains(logs.String(), "Seccomp: 0") {
		t.Errorf("the log does not say what the worker showed:\n%s", tail(logs.String(), 2000))
	}
	// The real worker binary, same server flags, serves.
	ok := start(t, newDB(t))
	ok.ok("read_query", q("SELECT 1 AS one"))
}

// BenchmarkSeccompCost measures what the filter costs a worker, with the
// probe binary (the lean worker plus the probe) as a worker with and
// without its filter, both started as the server starts a standby
// (confined by the front, database opened ahead, codec warmed), in the
// same loop: "start" runs from the process start to its ready byte (the
// filter is installed just before it), "answer" from the request of a
// primary-key SELECT to the whole answer (the worker's share of a paced
// call, where every system call passes the filter).
func BenchmarkSeccompCost(b *testing.B) {
	if err := sandbox.SeccompSupported(); err != nil {
		b.Skip(err)
	}
	bin := probeBinaries(b)["cgo"]
	db := filepath.Join(testDir(b), "seccomp.db")
	s := start(b, db)
	s.ok("write_query", q("CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT)"))
	s.ok("write_query", q("INSERT INTO items VALUES (1, 'one', 1.5, 3, 'a note')"))
	a := sandbox.Allowance{DB: db}
	base := ipc.WorkerEnv{Sandbox: &a, Preopen: db, Ready: true, FrontPID: os.Getpid(), Warm: true}.Env(os.Environ())
	req := fmt.Sprintf(`{"v":%d,"op":"query","db":%q,"mode":"read","sql":"SELECT id, name, price, qty, note FROM items WHERE id = 1",`+
		`"caps":{"max_rows":1000,"max_result_bytes":32768,"max_cell_chars":2000,"max_update_rows":500},`+
		`"limits":{"timeout_ms":10000,"max_growth_mb":512,"sandbox":true}}`, ipc.Version, db)
	type mode struct {
		name          string
		seccomp       string // /proc status wanted
		start, answer []time.Duration
	}
	modes := []*mode{{name: "seccomp", seccomp: "2"}, {name: "no-seccomp", seccomp: "0"}}
	b.ResetTimer()
	for range b.N {
		for _, m := range modes {
			cmd := exec.Command(bin)
			cmd.Env = append(slices.Clone(base), "MCP_SQLITE_PROBE_AS_WORKER="+m.name)
			stdin, _ := cmd.StdinPipe()
			stdout, _ := cmd.StdoutPipe()
			reaped := make(chan struct{})
			begin := time.Now()
			if _, err := sandbox.StartConfined(cmd, a, reaped); err != nil {
				b.Fatal(err)
			}
			out := bufio.NewReader(stdout)
			if c, err := out.ReadByte(); err != nil || c != ipc.ReadyByte {
				b.Fatalf("%s: no ready byte: %q %v", m.name, c, err)
			}
			m.start = append(m.start, time.Since(begin))
			if got := procStatus(cmd.Process.Pid, "Seccomp"); got != m.seccomp {
				b.Fatalf("%s: Seccomp %q, want %s", m.name, got, m.seccomp)
			}
			begin = time.Now()
			_, _ = io.WriteString(stdin, req)
			stdin.Close()
			resp, err := ipc.ReadResponse(out)
			m.answer = append(m.answer, time.Since(begin))
			if err != nil || !resp.OK {
				b.Fatalf("%s: %v %+v", m.name, err, resp)
			}
			_, _ = io.Copy(io.Discard, out)
			_ = cmd.Wait()
			close(reaped)
		}
	}
	b.StopTimer()
	for _, m := range modes {
		b.ReportMetric(percentile(m.start, 0.5), m.name+"-start-p50-ms")
		b.ReportMetric(percentile(m.answer, 0.5), m.name+"-answer-p50-ms")
	}
	b.ReportMetric(percentile(modes[0].start, 0.5)/percentile(modes[1].start, 0.5), "start-seccomp/without")
	b.ReportMetric(percentile(modes[0].answer, 0.5)/percentile(modes[1].answer, 0.5), "answer-seccomp/without")
	b.ReportMetric(0, "ns/op")
}
