//go:build windows

package tests

import (
	"testing"
	"unsafe"

	"golang.org/x/sys/windows"
)

// isProcessInJob is kernel32's IsProcessInJob, which x/sys does not wrap.
var isProcessInJob = windows.NewLazySystemDLL("kernel32.dll").NewProc("IsProcessInJob")

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
	var workers []int
	mustWaitFor(t, "4 standbys", func() bool { workers = workersOfServer(server); return len(workers) == 4 })
	for _, pid := range workers {
		mustWaitFor(t, "the standby's job", func() bool {
			h, err := windows.OpenProcess(windows.PROCESS_QUERY_INFORMATION, false, uint32(pid))
			if err != nil {
				return false
			}
			defer windows.CloseHandle(h)
			var in int32
			r, _, _ := isProcessInJob.Call(uintptr(h), 0, uintptr(unsafe.Pointer(&in)))
			return r != 0 && in != 0
		})
	}
	if got := s.ok("read_query", q("SELECT 1 AS one")); got != "one\n1\n# 1 rows" {
		t.Fatalf("call: %q", got)
	}
}
