//go:build unix

package restore

import (
	"errors"
	"os"
	"slices"

	"golang.org/x/sys/unix"
)

// otherHolders reads which other processes hold SQLite's locks on the WAL
// index of db, without taking any.
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
	owners, err := lockOwners(f)
	if err != nil {
		return nil, err
	}
	var out []holder
	var seen []int
	for i := range shmSlots {
		for _, pid := range owners[shmLockBase+int64(i)] {
			if !slices.Contains(seen, pid) {
				seen = append(seen, pid)
				out = append(out, holder{pid: pid, what: slotWhat(i), busy: true})
			}
		}
	}
	for _, pid := range owners[shmDMS] {
		if !slices.Contains(seen, pid) {
			seen = append(seen, pid)
			out = append(out, holder{pid: pid, what: "the database open"})
		}
	}
	return out, nil
}

// getlkOwners asks the kernel (F_GETLK, which takes nothing) who holds
// each lock byte of the WAL index; it names one process per byte.
func getlkOwners(f *os.File) (map[int64][]int, error) {
	owners := map[int64][]int{}
	for off := int64(shmLockBase); off <= shmDMS; off++ {
		lk := unix.Flock_t{Type: unix.F_WRLCK, Whence: 0, Start: off, Len: 1}
		if err := unix.FcntlFlock(f.Fd(), unix.F_GETLK, &lk); err != nil {
			return nil, err
		}
		if lk.Type != unix.F_UNLCK && lk.Pid > 0 {
			owners[off] = []int{int(lk.Pid)}
		}
	}
	return owners, nil
}
