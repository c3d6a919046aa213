package tests

import (
	"bufio"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// frontLocks returns why the process pid does not hold the lock invariant
// on the WAL database db, or "" when it does. skip is true when nothing
// can be checked: the process has ended, or it has no -shm open (the
// database is not in WAL mode: a rollback-journal connection holds no lock
// while idle).
func frontLocks(pid int, db string) (problem string, skip bool) {
	if !alive(pid) {
		return "", true
	}
	shmFD := ""
	fds, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	for _, fd := range fds {
		target, err := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, fd.Name()))
		if err != nil {
			continue
		}
		target = strings.TrimSuffix(target, " (deleted)")
		if target == db+"-shm" {
			shmFD = fd.Name()
		}
		if (target == db || target == db+"-wal" || target == db+"-shm") && !closeOnExec(pid, fd.Name()) && alive(pid) {
			return fmt.Sprintf("the front's descriptor %s of %s is not close-on-exec: every worker it starts inherits it", fd.Name(), target), false
		}
	}
	if shmFD == "" {
		if _, err := os.Stat(db + "-shm"); err == nil && alive(pid) {
			return "the front has no descriptor of " + db + "-shm, which exists: it is not connected to its WAL index", false
		}
		return "", true
	}
	held, err := os.Stat(fmt.Sprintf("/proc/%d/fd/%s", pid, shmFD))
	if err != nil {
		return "", true // the process ended meanwhile
	}
	onDisk, err := os.Stat(db + "-shm")
	if err != nil {
		return fmt.Sprintf("%s-shm is gone while the front has it open (deleted under the running server)", db), false
	}
	if !os.SameFile(held, onDisk) {
		return fmt.Sprintf("%s-shm on disk is not the one the front has open (replaced under the running server)", db), false
	}
	dbInfo, err := os.Stat(db)
	if err != nil {
		return fmt.Sprintf("%s is gone: %v", db, err), false
	}
	locks := posixLocks(pid)
	var missing []string
	for _, f := range []struct {
		name string
		fi   os.FileInfo
	}{{"the database file", dbInfo}, {"its -shm", onDisk}} {
		if !locks[inode(f.fi)] {
			missing = append(missing, f.name)
		}
	}
	if len(missing) > 0 && alive(pid) {
		return fmt.Sprintf("the front (pid %d) holds no POSIX lock on %s of %s: something in it opened and closed a descriptor of the file by hand, which drops SQLite's locks (locks held: %v)", pid, strings.Join(missing, " and "), db, locks), false
	}
	return "", false
}

// posixLocks lists the inodes on which pid holds a POSIX lock, from
// /proc/locks ("1: POSIX ADVISORY READ 1234 fe:00:9978001 128 128"; a
// blocked request, "->", is not held).
func posixLocks(pid int) map[uint64]bool {
	out := map[uint64]bool{}
	f, err := os.Open("/proc/locks")
	if err != nil {
		return out
	}
	defer f.Close()
	want := strconv.Itoa(pid)
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "POSIX" || fields[4] != want {
			continue
		}
		id := fields[5]
		ino, err := strconv.ParseUint(id[strings.LastIndexByte(id, ':')+1:], 10, 64)
		if err == nil {
			out[ino] = true
		}
	}
	return out
}

// closeOnExec reads the flags of pid's descriptor fd (octal, in
// /proc/pid/fdinfo; O_CLOEXEC is 02000000). A descriptor that is gone
// counts as fine.
func closeOnExec(pid int, fd string) bool {
	info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, fd))
	if err != nil {
		return true
	}
	for _, line := range strings.Split(string(info), "\n") {
		if v, ok := strings.CutPrefix(line, "flags:"); ok {
			flags, err := strconv.ParseUint(strings.TrimSpace(v), 8, 64)
			return err != nil || flags&syscall.O_CLOEXEC != 0
		}
	}
	return true
}

func inode(fi os.FileInfo) uint64 { return fi.Sys().(*syscall.Stat_t).Ino }
