//go:build windows

package tests

import (
	"testing"

	"golang.org/x/sys/windows"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/contain"
)

// inJob reports whether process pid is in a Job Object (false if it
// cannot be opened).
func inJob(t *testing.T, pid int) bool {
	t.Helper()
	h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
	if err != nil {
		return false
	}
	defer windows.CloseHandle(h)
	in, err := contain.InJob(h)
	return err == nil && in
}

// TestStandbyInAJobWhileWaiting is Windows' counterpart of
// TestStandbyConfinedAndLimitedWhileWaiting: every standby worker sits in
// a Job Object (its memory limit, no child processes, killed with the
// server) before any request reaches it. The job's limits cannot be read
// from outside the job; TestMemoryBomb shows its memory limit at work, and
// TestNoWorkerOutlivesFront its kill when the server's handle closes.
func TestStandbyInAJobWhileWaiting(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s, _ := startLogged(t, serverBin, db, "--worker-memory-mb", "200")
	server := serverOf(serverBin, db)
	// The server is in a kill-on-close job of its own (package contain),
	// so a worker it started is in a job from its creation: the check
	// below then sees that job too; the worker's own job is the one whose
	// memory limit TestMemoryBomb hits.
	if !inJob(t, server) {
		t.Fatalf("the server (pid %d) is in no Job Object: a worker started as it is killed would outlive it", server)
	}
	var workers []int
	mustWaitFor(t, "4 standbys", func() bool { workers = workersOfServer(server); return len(workers) == 4 })
	for _, pid := range workers {
		mustWaitFor(t, "the standby's job", func() bool { return inJob(t, pid) })
	}
	if got := s.ok("read_query", q("SELECT 1 AS one")); got != "one\n1\n# 1 rows" {
		t.Fatalf("call: %q", got)
	}
}
