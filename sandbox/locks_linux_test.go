package sandbox

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

// posixLocked reports whether this process holds a POSIX lock on the file
// at path, as /proc/locks shows it (the inode; flock locks do not count).
func posixLocked(t *testing.T, path string) bool {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	ino := strconv.FormatUint(fi.Sys().(*syscall.Stat_t).Ino, 10)
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Skipf("no /proc/locks: %v", err)
	}
	defer f.Close()
	pid := strconv.Itoa(os.Getpid())
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// 1: POSIX  ADVISORY  READ 1234 fe:00:9978001 128 128
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "POSIX" {
			continue
		}
		dev := strings.Split(fields[5], ":")
		if fields[4] == pid && dev[len(dev)-1] == ino {
			return true
		}
	}
	return false
}

// walConnection opens a WAL database with one idle connection, as the
// front keeps its own, and returns the path.
func walConnection(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE IF NOT EXISTS t(x); SELECT count(*) FROM t`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-shm"} {
		if !posixLocked(t, p) {
			t.Fatalf("an idle WAL connection holds no POSIX lock on %s", filepath.Base(p))
		}
	}
	return path
}

// TestRulesKeepLocks: the front builds a worker's ruleset while its own
// SQLite connection holds locks on the database and its -shm; building it
// (header read through the hold, companions, O_PATH rules) must leave
// every lock in place. The last case shows the trap the test guards
// against: an ordinary open and close drops the connection's locks.
func TestRulesKeepLocks(t *testing.T) {
	t.Run("ruleset for a worker", func(t *testing.T) {
		path := walConnection(t)
		hold, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer hold.Close()
		a := Allowance{DB: path, SnapshotDir: filepath.Join(filepath.Dir(path), "snaps"), TempDir: t.TempDir(), Header: hold}
		var rep Report
		ruleset, err := buildRuleset(a, &rep, func(int, int) error { return nil })
		if err != nil {
			t.Fatal(err)
		}
		if ruleset >= 0 {
			syscall.Close(ruleset)
		} else {
			t.Logf("no Landlock (%s): only the header read and the companions were checked", rep.Missing)
		}
		for _, p := range []string{path, path + "-shm"} {
			if !posixLocked(t, p) {
				t.Errorf("the connection's POSIX lock on %s is gone after the ruleset was built", filepath.Base(p))
			}
		}
	})
	t.Run("an open and close by hand drops them", func(t *testing.T) {
		path := walConnection(t)
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		f.Close()
		if posixLocked(t, path) {
			t.Fatal("closing a descriptor of the database kept the connection's lock: the guard above proves nothing on this kernel")
		}
	})
}

// TestPrepareMakesCompanions: a WAL database without its -wal and -shm
// gets both, empty and with the database's mode, without a descriptor of
// either being opened.
func TestPrepareMakesCompanions(t *testing.T) {
	path := walConnection(t)
	dir := t.TempDir()
	bare := filepath.Join(dir, "copy.db")
	// A WAL database file alone: its header says WAL, no companions.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bare, data, 0o640); err != nil {
		t.Fatal(err)
	}
	var rep Report
	wal, err := prepare(Allowance{DB: bare}, &rep)
	if err != nil || !wal {
		t.Fatalf("prepare: wal=%v err=%v", wal, err)
	}
	for _, p := range Companions(bare)[:2] {
		fi, err := os.Stat(p)
		if err != nil {
			t.Fatalf("%s not made: %v", filepath.Base(p), err)
		}
		if fi.Size() != 0 || !fi.Mode().IsRegular() || fi.Mode().Perm()&^0o640 != 0 {
			t.Errorf("%s: size %d mode %v, want an empty regular file within 0640", filepath.Base(p), fi.Size(), fi.Mode())
		}
	}
	if _, err := os.Stat(bare + "-journal"); err == nil {
		t.Error("a -journal was made for a WAL database")
	}
}
