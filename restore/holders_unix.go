//go:build unix

package restore

import (
	"errors"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// otherHolders reads which other processes hold SQLite's locks on the WAL
// index of db, without taking any (F_GETLK only asks).
//
// It opens and closes the -shm file, which drops every POSIX lock this
// process holds on it: call it only before this process's first SQLite
// connection to db.
func otherHolders(db string) ([]holder, error) {
	f, err := os.Open(db + "-shm")
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil // no WAL index: no connection in WAL mode
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []holder
	seen := map[int]bool{}
	ask := func(off int64) (int, error) {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
			return 0, err
		}
		if lk.Type == unix.F_UNLCK {
			return 0, nil
		}
		return int(lk.Pid), nil
	}
	for i := range shmSlots {
		pid, err := ask(shmLockBase + int64(i))
		if err != nil {
			return nil, err
		}
		if pid > 0 && !seen[pid] {
			seen[pid] = true
			out = append(out, holder{pid: pid, what: slotWhat(i), busy: true})
		}
	}
	// F_GETLK names one holder of a byte; the open-only case is a note, so
	// one name is enough.
	if pid, err := ask(shmDMS); err == nil && pid > 0 && !seen[pid] {
		out = append(out, holder{pid: pid, what: "the database open"})
	}
	return out, nil
}

// programName is the command name of pid where /proc tells it (Linux).
func programName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
