package tests

// How the tests find processes on Linux: /proc.

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// procArgs returns the command line and parent pid of a Linux process.
func procArgs(pid int) ([]string, int) {
	cmdline, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "cmdline"))
	if err != nil {
		return nil, 0
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return nil, 0
	}
	// The field after the parenthesised command name is the state, then ppid.
	rest := stat[bytes.LastIndexByte(stat, ')')+2:]
	fields := strings.Fields(string(rest))
	ppid, _ := strconv.Atoi(fields[1])
	return strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00"), ppid
}

// processes lists, in order, the pids in /proc for which match is true
// (Linux).
func processes(match func(pid int) bool) []int {
	var pids []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		if pid, err := strconv.Atoi(e.Name()); err == nil && match(pid) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}

// serverOf finds the pid of the server process bin serving db, or 0.
func serverOf(bin, db string) int {
	pids := processes(func(pid int) bool {
		args, _ := procArgs(pid)
		return len(args) >= 3 && args[0] == bin && args[1] == "--db" && args[2] == db
	})
	if len(pids) == 0 {
		return 0
	}
	return pids[0]
}

// workersOfServer lists the worker processes whose parent is pid.
func workersOfServer(pid int) []int {
	if pid == 0 {
		return nil
	}
	return processes(func(child int) bool {
		args, ppid := procArgs(child)
		return ppid == pid && isWorkerArgs(args)
	})
}

// workersOf lists the processes whose environment names db as the database
// they were started for: the workers of one server, wherever they were
// reparented.
func workersOf(db string) []int {
	return processes(func(pid int) bool {
		env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "environ"))
		return err == nil && bytes.Contains(env, []byte("="+db+"\x00")) && bytes.Contains(env, []byte("MCP_SQLITE_WORKER_PREOPEN="))
	})
}

// procStatus returns one field of /proc/pid/status.
func procStatus(pid int, field string) string {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return ""
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			return strings.TrimSpace(rest)
		}
	}
	return ""
}

// running reports whether a thread of pid is on a CPU or waiting for one
// (the main thread of a Go program is often idle while another runs).
func running(pid int) bool {
	tasks, _ := os.ReadDir(filepath.Join("/proc", strconv.Itoa(pid), "task"))
	for _, task := range tasks {
		stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "task", task.Name(), "stat"))
		if err != nil {
			continue
		}
		if rest := stat[bytes.LastIndexByte(stat, ')')+1:]; len(rest) > 1 && rest[1] == 'R' {
			return true
		}
	}
	return false
}

// rssKB is a process's resident set size in kB (Linux).
func rssKB(pid int) int64 {
	status, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "status"))
	if err != nil {
		return -1
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb
		}
	}
	return -1
}

// alive reports whether pid is a process that has not ended (a zombie has).
func alive(pid int) bool {
	state := procStatus(pid, "State")
	return state != "" && !strings.HasPrefix(state, "Z")
}

// stopSignals are the ways a host stops a server besides closing its
// stdin, each with the function that sends it.
var stopSignals = map[string]func(*exec.Cmd) error{
	"SIGTERM": func(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGTERM) },
	"SIGINT":  func(cmd *exec.Cmd) error { return cmd.Process.Signal(syscall.SIGINT) },
}

// newProcessGroup prepares cmd for the signals above (nothing on Linux).
func newProcessGroup(*exec.Cmd) {}

// signalUnsupported: every stop signal is delivered on Linux.
func signalUnsupported(error) string { return "" }
