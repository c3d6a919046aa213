package sandbox

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
)

// Landlock rights by the ABI that introduced them.
const (
	fsABI1 = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_READ_DIR |
		unix.LANDLOCK_ACCESS_FS_REMOVE_DIR | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE |
		unix.LANDLOCK_ACCESS_FS_MAKE_CHAR | unix.LANDLOCK_ACCESS_FS_MAKE_DIR |
		unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_MAKE_SOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_FIFO | unix.LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		unix.LANDLOCK_ACCESS_FS_MAKE_SYM

	// Rights that may be granted on a file that is not a directory.
	fileRights = unix.LANDLOCK_ACCESS_FS_EXECUTE | unix.LANDLOCK_ACCESS_FS_WRITE_FILE |
		unix.LANDLOCK_ACCESS_FS_READ_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE |
		unix.LANDLOCK_ACCESS_FS_IOCTL_DEV

	read   = unix.LANDLOCK_ACCESS_FS_READ_FILE
	rw     = read | unix.LANDLOCK_ACCESS_FS_WRITE_FILE | unix.LANDLOCK_ACCESS_FS_TRUNCATE
	run    = read | unix.LANDLOCK_ACCESS_FS_EXECUTE
	create = unix.LANDLOCK_ACCESS_FS_MAKE_REG | unix.LANDLOCK_ACCESS_FS_REMOVE_FILE
)

// handledFS is every filesystem right the kernel of this ABI knows: all are
// denied unless a rule grants them.
func handledFS(abi int) uint64 {
	h := uint64(fsABI1)
	if abi >= 2 {
		h |= unix.LANDLOCK_ACCESS_FS_REFER
	}
	if abi >= 3 {
		h |= unix.LANDLOCK_ACCESS_FS_TRUNCATE
	}
	if abi >= 5 {
		h |= unix.LANDLOCK_ACCESS_FS_IOCTL_DEV
	}
	if abi >= 9 {
		// connect() to pathname UNIX sockets (nscd, D-Bus, databases).
		h |= unix.LANDLOCK_ACCESS_FS_RESOLVE_UNIX
	}
	return h
}

// rulesetAttr is struct landlock_ruleset_attr up to the scoped field; the
// size passed to the kernel follows the ABI so older kernels accept it.
type rulesetAttr struct {
	handledFS  uint64
	handledNet uint64
	scoped     uint64
}

// Supported returns the Landlock ABI version, or why there is none.
func Supported() (int, error) {
	abi, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, 0, 0, unix.LANDLOCK_CREATE_RULESET_VERSION)
	if e != 0 {
		switch e {
		case unix.ENOSYS:
			return 0, errors.New("sandbox: Landlock is not available: the kernel was built without it (ENOSYS)")
		case unix.EOPNOTSUPP:
			return 0, errors.New("sandbox: Landlock is not available: it is disabled at boot (EOPNOTSUPP; add landlock to the lsm= kernel parameter)")
		}
		return 0, fmt.Errorf("sandbox: Landlock is not available: %w", e)
	}
	return int(abi), nil
}

// Apply restricts the process to a: no_new_privs, then a Landlock ruleset
// where the kernel has Landlock (with one warning-worthy Report.Missing
// where it has not). It restricts every thread at once where the runtime
// can (no cgo); otherwise it restricts this thread and re-executes the
// binary from it, and returns only on failure. A failure leaves the
// process partly restricted at most; the caller must not go on to run SQL.
func Apply(a Allowance, opt Options) (Report, error) {
	rep := Report{}
	ruleset, err := buildRuleset(a, &rep, func(ruleset, abi int) error {
		// RLIMIT_AS is measured from /proc/self/status; /proc/self
		// resolves to this pid, which a re-exec keeps. (A worker the
		// front starts confined gets its limit from the front instead.)
		return allow(ruleset, abi, "/proc/self", read, true, &rep)
	})
	if err != nil {
		return rep, err
	}
	if ruleset >= 0 {
		defer unix.Close(ruleset)
	}

	err = allThreads(ruleset)
	if err == nil {
		rep.NoNewPrivs, rep.Landlock = true, ruleset >= 0
		return rep, nil
	}
	if !errors.Is(err, syscall.ENOTSUP) {
		return rep, fmt.Errorf("sandbox: restrict all threads: %w", err)
	}
	if ruleset >= 0 {
		// Only the re-exec path needs to run anything: this binary and the
		// libraries its loader maps.
		if err := allowExec(ruleset, &rep); err != nil {
			return rep, err
		}
	}
	return rep, reexec(ruleset, rep, opt)
}

// buildRuleset makes the allowance's files exist and, where the kernel has
// Landlock, returns a ruleset that allows a plus what more adds; without
// Landlock it returns -1 and says why in rep.Missing. The caller closes a
// ruleset it gets.
func buildRuleset(a Allowance, rep *Report, more func(ruleset, abi int) error) (int, error) {
	wal, err := prepare(a, rep)
	if err != nil {
		return -1, err
	}
	abi, err := Supported()
	if err != nil {
		rep.Missing = err.Error()
		return -1, nil
	}
	rep.ABI = abi
	ruleset, err := newRuleset(abi, rep)
	if err != nil {
		return -1, err
	}
	err = allowAllowance(ruleset, abi, a, wal, rep)
	if err == nil {
		err = more(ruleset, abi)
	}
	if err != nil {
		unix.Close(ruleset)
		return -1, err
	}
	return ruleset, nil
}

// prepare makes the files the allowance names exist, as far as creating
// them is harmless, because Landlock rules attach to existing files only.
// It reports whether the database is in WAL mode.
//
// The front runs it before every worker start, while its own SQLite
// connections hold POSIX locks on the database and its -shm: it never
// opens and closes a descriptor of those files, since on Linux that close
// would drop every lock the process holds on them (osfile/DESIGN.md).
// The header is read through a.Header (the front's hold), companions are
// made with mknod, which creates a file without opening it, and rules
// attach through O_PATH descriptors (see allow).
func prepare(a Allowance, rep *Report) (wal bool, err error) {
	if a.SnapshotDir != "" {
		// A folder that cannot be made (a removable drive not plugged in)
		// costs the snapshots, not the worker: allowAllowance leaves it
		// out, and a snapshot then fails where it is asked for.
		_ = osfile.MkdirAll(a.SnapshotDir, 0o700)
	}
	fi, err := os.Stat(a.DB)
	if err != nil {
		// The worker answers "database file not found" for the request.
		return false, nil
	}
	if !isWAL(a) {
		if !a.ReadOnly {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the database is not in WAL mode, so its rollback journal is created and deleted per transaction: the worker may create and remove files in %s", filepath.Dir(a.DB)))
		}
		return false, nil
	}
	// A WAL database has its -wal and -shm while any connection is open
	// (the front keeps one), and SQLite creates them empty, also for a
	// read-only connection. Where that fails (a read-only folder), SQLite
	// meets the same failure and reports it. An existing file is left as
	// it is (EEXIST).
	for _, p := range Companions(a.DB)[:2] {
		_ = unix.Mknod(p, unix.S_IFREG|uint32(fi.Mode().Perm()), 0)
	}
	return true, nil
}

// isWAL reads the file format bytes of the database header: 2 means WAL.
// It reads through a.Header when the caller has one (the front's hold);
// otherwise it opens the file, which only a process with no SQLite
// connection to it may do (a worker confining itself before it opens its
// database).
func isWAL(a Allowance) bool {
	r := a.Header
	if r == nil {
		f, err := os.Open(a.DB)
		if err != nil {
			return false
		}
		defer f.Close()
		r = f
	}
	var h [20]byte
	if _, err := r.ReadAt(h[:], 0); err != nil {
		return false
	}
	return h[18] == 2 && h[19] == 2
}

func newRuleset(abi int, rep *Report) (int, error) {
	attr := rulesetAttr{handledFS: handledFS(abi)}
	size := unsafe.Sizeof(attr.handledFS)
	if abi >= 4 {
		attr.handledNet = unix.LANDLOCK_ACCESS_NET_BIND_TCP | unix.LANDLOCK_ACCESS_NET_CONNECT_TCP
		size += unsafe.Sizeof(attr.handledNet)
		rep.TCPDenied = true
	}
	if abi >= 6 {
		attr.scoped = unix.LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | unix.LANDLOCK_SCOPE_SIGNAL
		size += unsafe.Sizeof(attr.scoped)
		rep.Scoped = true
	}
	fd, _, e := unix.Syscall(unix.SYS_LANDLOCK_CREATE_RULESET, uintptr(unsafe.Pointer(&attr)), size, 0)
	if e != 0 {
		return -1, fmt.Errorf("sandbox: landlock_create_ruleset: %w", e)
	}
	return int(fd), nil
}

// allowAllowance grants the database, its companions, the snapshot folder
// and the few read-only files the runtime and SQLite use.
func allowAllowance(ruleset, abi int, a Allowance, wal bool, rep *Report) error {
	dbRights := uint64(rw)
	if a.ReadOnly {
		dbRights = read
	}
	if err := allow(ruleset, abi, a.DB, dbRights, false, rep); err != nil {
		return err
	}
	for _, p := range Companions(a.DB) {
		r := dbRights
		if a.ReadOnly && strings.HasSuffix(p, "-shm") {
			// Readers of a WAL database write their read marks here; it is
			// an index, not data.
			r = rw
		}
		if err := allow(ruleset, abi, p, r, true, rep); err != nil {
			return err
		}
	}
	if !a.ReadOnly && !wal {
		if _, err := os.Stat(a.DB); err == nil {
			if err := allow(ruleset, abi, filepath.Dir(a.DB), rw|create, false, rep); err != nil {
				return err
			}
		}
	}
	if a.SnapshotDir != "" {
		if fi, err := os.Stat(a.SnapshotDir); err != nil || !fi.IsDir() {
			rep.Notes = append(rep.Notes, fmt.Sprintf("the snapshot folder %s cannot be reached, so snapshots fail or are skipped; every other call works", a.SnapshotDir))
		} else if err := allow(ruleset, abi, a.SnapshotDir, rw|create|unix.LANDLOCK_ACCESS_FS_READ_DIR, false, rep); err != nil {
			return err
		}
	}
	if a.TempDir != "" {
		if err := allow(ruleset, abi, a.TempDir, rw|create, false, rep); err != nil {
			return err
		}
	}
	for _, p := range []string{"/dev/urandom", "/etc/localtime"} {
		if err := allow(ruleset, abi, p, read, true, rep); err != nil {
			return err
		}
	}
	return allow(ruleset, abi, "/dev/null", rw, true, rep)
}

// allowExec grants what re-executing this binary needs: the binary, every
// file mapped into this process (the ELF loader and shared libraries of a
// cgo build) and the loader's cache.
func allowExec(ruleset int, rep *Report) error {
	abi := rep.ABI
	paths := []string{"/proc/self/exe"}
	mapped, err := mappedFiles()
	if err != nil {
		return err
	}
	return allowPrograms(ruleset, abi, append(paths, mapped...), rep)
}

// allowPrograms lets paths be run and mapped, and the dynamic loader read
// its cache.
func allowPrograms(ruleset, abi int, paths []string, rep *Report) error {
	for _, p := range paths {
		if err := allow(ruleset, abi, p, run, true, rep); err != nil {
			return err
		}
	}
	for _, p := range []string{"/etc/ld.so.cache", "/etc/ld.so.preload"} {
		if err := allow(ruleset, abi, p, read, true, rep); err != nil {
			return err
		}
	}
	return nil
}

// mappedFiles lists the files mapped into this process.
func mappedFiles() ([]string, error) {
	f, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, fmt.Errorf("sandbox: read /proc/self/maps: %w", err)
	}
	defer f.Close()
	seen := map[string]bool{}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) != 6 || !strings.HasPrefix(fields[5], "/") || seen[fields[5]] {
			continue
		}
		seen[fields[5]] = true
		out = append(out, fields[5])
	}
	return out, sc.Err()
}

// allow adds one path-beneath rule. Rights the kernel does not handle are
// dropped (they are not restricted there), as are directory rights on a
// file. A missing optional path is skipped.
//
// The rule is made from an O_PATH descriptor, and it must stay so: the
// front adds rules for its database and companions while its SQLite
// connections hold POSIX locks on them, and closing an ordinary descriptor
// of a file drops every POSIX lock the process holds on it, whereas the
// kernel skips that for O_PATH descriptors (they never open the file for
// I/O). TestRulesKeepLocks holds it.
func allow(ruleset, abi int, path string, rights uint64, optional bool, rep *Report) error {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_CLOEXEC, 0)
	if err != nil {
		if optional && errors.Is(err, unix.ENOENT) {
			return nil
		}
		return fmt.Errorf("sandbox: open %s for a rule: %w", path, err)
	}
	defer unix.Close(fd)
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return fmt.Errorf("sandbox: stat %s: %w", path, err)
	}
	rights &= handledFS(abi)
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		rights &= fileRights
	}
	attr := unix.LandlockPathBeneathAttr{Allowed_access: rights, Parent_fd: int32(fd)}
	_, _, e := unix.Syscall6(unix.SYS_LANDLOCK_ADD_RULE, uintptr(ruleset), unix.LANDLOCK_RULE_PATH_BENEATH,
		uintptr(unsafe.Pointer(&attr)), 0, 0, 0)
	if e != 0 {
		return fmt.Errorf("sandbox: landlock_add_rule %s: %w", path, e)
	}
	rep.Rules = append(rep.Rules, path+" "+rightsText(rights))
	return nil
}

// allThreads sets no_new_privs and the ruleset (if any) on every thread. It
// fails with ENOTSUP, having changed nothing, when the binary uses cgo.
func allThreads(ruleset int) error {
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_PRCTL, unix.PR_SET_NO_NEW_PRIVS, 1, 0); e != 0 {
		return e
	}
	if ruleset < 0 {
		return nil
	}
	if _, _, e := syscall.AllThreadsSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
		return e
	}
	return nil
}

// reexec restricts the calling thread and replaces the process image from
// it: execve keeps the thread's no_new_privs and Landlock domain, and every
// thread of the new image starts from them.
func reexec(ruleset int, rep Report, opt Options) error {
	// Never unlocked: this thread either execs or the worker gives up.
	runtime.LockOSThread()
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	rep.NoNewPrivs = true
	if ruleset >= 0 {
		if _, _, e := unix.RawSyscall(unix.SYS_LANDLOCK_RESTRICT_SELF, uintptr(ruleset), 0, 0); e != 0 {
			return fmt.Errorf("sandbox: landlock_restrict_self: %w", e)
		}
		rep.Landlock = true
	}
	if opt.Stdin != nil {
		if err := stdinFrom(opt.Stdin); err != nil {
			return err
		}
	}
	rep.Reexec = true
	env := append(withoutVars(os.Environ(), EnvConfined), opt.Env...)
	env = append(env, EnvConfined+"="+rep.encode())
	// /proc/self/exe is the running binary even if its path was replaced.
	err := syscall.Exec("/proc/self/exe", os.Args, env)
	return fmt.Errorf("sandbox: re-execute the confined worker: %w", err)
}

func (r Report) encode() string {
	b, _ := json.Marshal(r)
	return string(b)
}

// stdinFrom puts data behind file descriptor 0 for the re-executed process.
func stdinFrom(data []byte) error {
	fd, err := unix.MemfdCreate("request", 0)
	if err != nil {
		return fmt.Errorf("sandbox: memfd for the request: %w", err)
	}
	f := os.NewFile(uintptr(fd), "request")
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("sandbox: write the request: %w", err)
	}
	if _, err := f.Seek(0, 0); err != nil {
		return err
	}
	if err := unix.Dup3(fd, 0, 0); err != nil {
		return fmt.Errorf("sandbox: request as stdin: %w", err)
	}
	return nil
}

// verifyConfined checks, in a re-executed process, that the marker tells
// the truth about no_new_privs.
func verifyConfined(rep Report) error {
	nnp, err := unix.PrctlRetInt(unix.PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0)
	if err != nil || nnp != 1 || !rep.NoNewPrivs {
		return fmt.Errorf("sandbox: %s is set but this process is not confined (no_new_privs=%d)", EnvConfined, nnp)
	}
	return nil
}

func rightsText(r uint64) string {
	names := []struct {
		bit  uint64
		name string
	}{
		{unix.LANDLOCK_ACCESS_FS_READ_FILE, "read"}, {unix.LANDLOCK_ACCESS_FS_WRITE_FILE, "write"},
		{unix.LANDLOCK_ACCESS_FS_TRUNCATE, "truncate"}, {unix.LANDLOCK_ACCESS_FS_EXECUTE, "execute"},
		{unix.LANDLOCK_ACCESS_FS_READ_DIR, "readdir"}, {unix.LANDLOCK_ACCESS_FS_MAKE_REG, "create"},
		{unix.LANDLOCK_ACCESS_FS_REMOVE_FILE, "remove"},
	}
	var out []string
	for _, n := range names {
		if r&n.bit != 0 {
			out = append(out, n.name)
		}
	}
	return strings.Join(out, ",")
}
