package tests

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

// The lock invariant (SPEC 5.3, osfile/DESIGN.md), checked at the end of
// every memory-profile session on Linux: while the front runs, its own
// SQLite connection (idle or not) holds a POSIX read lock on the database
// file (SQLite's SHARED lock, which a WAL connection keeps for as long as
// it is open) and one on the -shm (the read lock on its DMS byte, for as
// long as the WAL index is mapped). Both belong to the front process; the
// front's flock hold shows in /proc/locks as FLOCK and does not count. A
// front that opened and closed a descriptor of either file by hand would
// have lost them, and another program's closing connection would then
// find itself "last" and delete the WAL under the server. The -shm it
// locks must also be the one on disk: the same inode. And every descriptor
// the front has of these files is close-on-exec, so that no worker (or
// Litestream) inherits one.

// guardLocks makes the session check the lock invariant when its test
// ends, before the server is stopped (cleanups run last first). Every
// memory-profile session helper calls it (start, startLogged, startOwn,
// startReplicated), so every end-to-end session in every pool
// configuration is checked. Readonly-profile sessions are not: that front
// holds no SQLite connection to its database, only the hold, so it has no
// lock to lose there.
func (s *session) guardLocks() {
	if runtime.GOOS != "linux" || s.cmd == nil || s.db == "" || readonlyProfile(s.cmd.Args) {
		return
	}
	s.t.Cleanup(func() { s.checkLocks() })
}

// readonlyProfile tells a readonly-profile server's command line.
func readonlyProfile(args []string) bool {
	for i, a := range args {
		if a == "--profile=readonly" || a == "--profile" && i+1 < len(args) && args[i+1] == "readonly" {
			return true
		}
	}
	return false
}

// checkLocks fails the test unless the server holds the lock invariant.
func (s *session) checkLocks() {
	s.t.Helper()
	if runtime.GOOS != "linux" || s.cmd == nil || s.cmd.Process == nil {
		return
	}
	if problem, _ := frontLocks(s.cmd.Process.Pid, absPath(s.t, s.db)); problem != "" {
		s.t.Error("lock guard: " + problem)
	}
}

func absPath(t testing.TB, p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return abs
}

// neighbourEnv makes the test binary, re-run, act as another program on
// the database it names: one read-write connection that reads and closes.
const neighbourEnv = "MCP_SQLITE_E2E_NEIGHBOUR_DB"

// runNeighbour is that program: it opens a read-write connection, reads
// the chain's head and the agent's table, and closes, as a hook's script
// would. It returns the exit status.
func runNeighbour(db string) int {
	c, err := sql.Open("sqlite", "file:"+db+"?mode=rw&_pragma=busy_timeout(5000)")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	var n, head int64
	err = c.QueryRow(`SELECT count(*), coalesce(max(id), 0) FROM memory_events`).Scan(&n, &head)
	if err == nil {
		err = c.QueryRow(`SELECT count(*) FROM notes`).Scan(&n)
	}
	if cerr := c.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Println(head)
	return 0
}
