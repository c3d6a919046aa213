//go:build sandboxprobe

package worker

import (
	"encoding/json"
	"errors"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// probeAsWorker makes the probe binary a worker: "no-seccomp" one that
// skips its seccomp filter, "seccomp" a plain one.
const probeAsWorker = "MCP_SQLITE_PROBE_AS_WORKER"

// This file exists only in test binaries (go build -tags sandboxprobe): the
// worker, once confined exactly as in production, runs the attempts read
// from stdin instead of a request, and reports each outcome.

// probeAttempt is one thing the probe tries: read, write (an existing
// file), create, exec, or connect (host:port over TCP); seccomp installs
// the worker's system call allowlist as a standby does before its
// request, for the attempts that follow; udp (host:port), unix,
// io_uring_setup, bpf, execve (a path) and ptrace make that system call
// directly (sandbox_probe_linux.go).
type probeAttempt struct {
	Op     string `json:"op"`
	Target string `json:"target"`
}

// probeOutcome is "ok" or the error text.
type probeOutcome struct {
	probeAttempt
	Result string `json:"result"`
}

func init() {
	switch os.Getenv(probeAsWorker) {
	case "no-seccomp":
		// Serve as a worker that confines itself without the seccomp
		// filter (one older than its server): the front must refuse it.
		skipSeccomp = true
		return
	case "seccomp":
		return // a plain worker: the yardstick of the one above
	}
	probeHook = func(st *sandbox.State) int {
		var attempts []probeAttempt
		if err := json.NewDecoder(os.Stdin).Decode(&attempts); err != nil {
			os.Stderr.WriteString("probe: " + err.Error() + "\n")
			return 2
		}
		out := struct {
			Confined bool           `json:"confined"`
			Report   sandbox.Report `json:"report"`
			Outcomes []probeOutcome `json:"outcomes"`
		}{Confined: st.Allowance != nil, Report: st.Report}
		for _, a := range attempts {
			if a.Op == "seccomp" {
				// As in Main: no core file, then the filter on every thread.
				result := "ok"
				err := applyProcessLimits(0, hclog.NewNullLogger())
				if err == nil {
					err = confineSyscalls(st, hclog.NewNullLogger())
				}
				if err != nil {
					result = err.Error()
				} else if !st.Report.Seccomp {
					result = "no filter installed"
				}
				out.Outcomes = append(out.Outcomes, probeOutcome{a, result})
				continue
			}
			out.Outcomes = append(out.Outcomes, probeOutcome{a, probeAllThreads(a)})
		}
		if err := json.NewEncoder(os.Stdout).Encode(out); err != nil {
			return 2
		}
		return 0
	}
}

// probeAllThreads makes the attempt on this thread and on fresh OS threads
// at once: Landlock holds per thread, so one unconfined thread would be a
// hole. It reports the outcome, or the disagreement.
func probeAllThreads(a probeAttempt) string {
	const threads = 4
	want := probeTry(a)
	results := make(chan string, threads)
	var wg sync.WaitGroup
	for range threads {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Locked goroutines hold their threads, so each attempt below
			// runs on a thread of its own.
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			results <- probeTry(a)
			time.Sleep(50 * time.Millisecond)
		}()
	}
	wg.Wait()
	close(results)
	for r := range results {
		if r != want {
			return "threads disagree: " + want + " / " + r
		}
	}
	return want
}

// probeTry returns "ok", "denied" (EACCES or EPERM) or the error text.
func probeTry(a probeAttempt) string {
	var err error
	switch a.Op {
	case "read":
		_, err = os.ReadFile(a.Target)
	case "write":
		var f *os.File
		if f, err = os.OpenFile(a.Target, os.O_WRONLY|os.O_APPEND, 0); err == nil {
			f.Close()
		}
	case "create":
		// A fresh name per attempt: the threads try at the same time.
		var f *os.File
		if f, err = os.CreateTemp(filepath.Dir(a.Target), filepath.Base(a.Target)+"-*"); err == nil {
			f.Close()
			os.Remove(f.Name())
		}
	case "exec":
		err = exec.Command(a.Target).Run()
	case "connect":
		var c net.Conn
		if c, err = net.DialTimeout("tcp", a.Target, 2*time.Second); err == nil {
			c.Close()
		}
	default:
		return probeSyscall(a)
	}
	switch {
	case err == nil:
		return "ok"
	case errors.Is(err, fs.ErrPermission):
		return "denied"
	}
	return err.Error()
}
