package tests

import (
	"bytes"
	"database/sql"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func mcpListTools() mcp.ListToolsRequest { return mcp.ListToolsRequest{} }

// lastAuditN returns the n-th newest audit row (1 is the newest).
func lastAuditN(t *testing.T, path string, n int) (tool string, ok bool, errText string) {
	t.Helper()
	db := openDirect(t, path)
	var e sql.NullString
	if err := db.QueryRow(`SELECT tool, ok, error FROM query_log ORDER BY id DESC LIMIT 1 OFFSET ?`, n-1).Scan(&tool, &ok, &e); err != nil {
		t.Fatal(err)
	}
	return tool, ok, e.String
}

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

// findWorker returns the pid of a worker process of the server of s, or 0.
func findWorker(t *testing.T, s *session) int {
	t.Helper()
	if workers := workersOfServer(serverOf(serverBin, s.db)); len(workers) > 0 {
		return workers[0]
	}
	return 0
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

// isWorkerArgs tells a worker's command line: the lean worker binary, or
// a server binary re-run with "worker".
func isWorkerArgs(args []string) bool {
	switch {
	case len(args) == 1:
		return args[0] == workerBin
	case len(args) == 2:
		return (args[0] == serverBin || args[0] == aloneServerBin) && args[1] == "worker"
	}
	return false
}

func sleepBriefly() { time.Sleep(50 * time.Millisecond) }

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
