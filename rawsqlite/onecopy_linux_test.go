package rawsqlite

import (
	"bufio"
	"database/sql"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	_ "modernc.org/sqlite"
)

// posixLocked reports whether this process holds a POSIX lock on path's
// inode, as /proc/locks shows it.
func posixLocked(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := ":" + strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fl := strings.Fields(sc.Text())
		if len(fl) >= 6 && fl[1] == "POSIX" && fl[4] == strconv.Itoa(os.Getpid()) && strings.HasSuffix(fl[5], ino) {
			return true
		}
	}
	return false
}

// TestOneCopyOfSQLite: the front uses modernc's database/sql driver (the
// memory store) and this package (snapshots, the worker) in one process.
// SQLite keeps its connections to one file in one table per process and
// closes a descriptor only when no connection of the process holds a lock
// on the file; a second copy of SQLite in the process would keep its own
// table and, closing its connection, drop the other copy's locks
// ("How To Corrupt An SQLite Database File": multiple copies of SQLite
// linked into one application). Both must be the same
// library: closing a connection of one leaves the other's locks in place.
func TestOneCopyOfSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-shm"} {
		if !posixLocked(t, p) {
			t.Fatalf("the driver's connection holds no lock on %s", filepath.Base(p))
		}
	}
	for range 3 {
		c, err := Open(path, ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Exec("SELECT count(*) FROM t"); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-shm"} {
			if !posixLocked(t, p) {
				t.Fatalf("closing a rawsqlite connection dropped the driver's lock on %s: two copies of SQLite in one process", filepath.Base(p))
			}
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the driver's connection after the others closed: %d, %v", n, err)
	}
}
