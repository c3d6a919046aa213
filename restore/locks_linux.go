package restore

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// lockOwners lists every process holding a POSIX lock on each byte of the
// WAL index's lock area, from /proc/locks (F_GETLK would name only one per
// byte); where /proc is not readable it asks F_GETLK.
func lockOwners(f *os.File) (map[int64][]int, error) {
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return getlkOwners(f)
	}
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return getlkOwners(f)
	}
	defer locks.Close()
	dev := uint64(st.Dev)
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(dev), unix.Minor(dev), st.Ino)
	self := os.Getpid()
	owners := map[int64][]int{}
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		// "1: POSIX  ADVISORY  READ 12551 fe:00:9986223 128 128"; lines
		// of waiting requests ("1: -> POSIX ...") have one field more.
		fields := strings.Fields(sc.Text())
		if len(fields) != 8 || fields[1] != "POSIX" || fields[5] != file {
			continue
		}
		pid, err1 := strconv.Atoi(fields[4])
		start, err2 := strconv.ParseInt(fields[6], 10, 64)
		end, err3 := strconv.ParseInt(fields[7], 10, 64)
		if fields[7] == "EOF" {
			end, err3 = shmDMS, nil
		}
		if err1 != nil || err2 != nil || err3 != nil || pid == self {
			continue
		}
		for off := max(start, shmLockBase); off <= min(end, shmDMS); off++ {
			owners[off] = append(owners[off], pid)
		}
	}
	if err := sc.Err(); err != nil {
		return getlkOwners(f)
	}
	return owners, nil
}

// programName is the command name of pid (/proc/PID/comm).
func programName(pid int) string {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/comm")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
