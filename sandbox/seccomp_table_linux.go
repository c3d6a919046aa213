//go:build linux && (amd64 || arm64)

package sandbox

import "golang.org/x/sys/unix"

// syscallTable is the worker's whole allowlist: every system call a
// confined worker makes, found by measurement (strace -f over confined
// workers running each kind of request and the fuzz seeds, then the
// end-to-end suite with the filter in its logging mode, seccomp_log_linux.go;
// DESIGN.md has the details), with what it gets. Anything not listed
// fails with EPERM. Calls that exist on one architecture only are the
// sys* constants of seccomp_linux_amd64.go and seccomp_linux_arm64.go
// (-1 where absent); the rest are x/sys/unix's, whose numbers differ per
// architecture.
var syscallTable = []rule{
	// Go runtime, memory: heap arenas, goroutine stacks, returning pages.
	// No executable mappings: nothing in a worker loads code after start.
	{unix.SYS_MMAP, noExec},
	{unix.SYS_MPROTECT, noExec},
	{unix.SYS_MUNMAP, permit},
	{unix.SYS_MADVISE, permit},
	{unix.SYS_MREMAP, permit},
	{unix.SYS_BRK, permit}, // libc's malloc in cgo builds
	{unix.SYS_MINCORE, permit},

	// Go runtime, threads: new threads only (clone with CLONE_THREAD, no
	// namespace); clone3 hides its flags behind a pointer, so it answers
	// ENOSYS and glibc and Go fall back to clone. fork, vfork and a clone
	// without CLONE_THREAD (a new process) are refused.
	{unix.SYS_CLONE, threadOnly},
	{unix.SYS_CLONE3, notHere},
	{unix.SYS_FUTEX, permit},
	{unix.SYS_SCHED_YIELD, permit},
	{unix.SYS_SCHED_GETAFFINITY, permit}, // GOMAXPROCS
	{unix.SYS_SET_ROBUST_LIST, permit},   // glibc thread start
	{unix.SYS_SET_TID_ADDRESS, permit},
	{unix.SYS_RSEQ, permit},
	{unix.SYS_GETTID, permit},
	{unix.SYS_EXIT, permit},
	{unix.SYS_EXIT_GROUP, permit},
	{unix.SYS_RESTART_SYSCALL, permit},
	{sysArchPrctl, permit}, // amd64: thread-local storage of a new thread

	// Go runtime, signals: handlers, masks, the signal stack, preemption
	// (tgkill of its own threads) and raise; kill and tgkill only inside
	// this process.
	{unix.SYS_RT_SIGACTION, permit},
	{unix.SYS_RT_SIGPROCMASK, permit},
	{unix.SYS_RT_SIGRETURN, permit},
	{unix.SYS_SIGALTSTACK, permit},
	{unix.SYS_TGKILL, ownPID},
	{unix.SYS_KILL, ownPID},
	{unix.SYS_GETPID, permit},

	// Time: the vDSO serves most; these are its fallbacks and the sleeps
	// of timers and the scheduler.
	{unix.SYS_CLOCK_GETTIME, permit},
	{unix.SYS_CLOCK_NANOSLEEP, permit},
	{unix.SYS_NANOSLEEP, permit},
	{unix.SYS_GETTIMEOFDAY, permit},

	// Go runtime, poller: pipes are inherited blocking, but timers and
	// os.File may wake the netpoller.
	{unix.SYS_EPOLL_CREATE1, permit},
	{unix.SYS_EPOLL_CTL, permit},
	{unix.SYS_EPOLL_PWAIT, permit},
	{unix.SYS_EPOLL_PWAIT2, permit},
	{sysEpollWait, permit},
	{unix.SYS_EVENTFD2, permit},
	{unix.SYS_PIPE2, permit},
	{unix.SYS_PPOLL, permit},
	{sysPoll, permit},

	// I/O on descriptors it holds: the request and answer pipes, stderr,
	// the database, its companions, snapshots and temporary files.
	{unix.SYS_READ, permit},
	{unix.SYS_WRITE, permit},
	{unix.SYS_PREAD64, permit},
	{unix.SYS_PWRITE64, permit},
	{unix.SYS_READV, permit},
	{unix.SYS_WRITEV, permit},
	{unix.SYS_LSEEK, permit},
	{unix.SYS_CLOSE, permit},
	{unix.SYS_FCNTL, permit}, // SQLite's POSIX locks, O_NONBLOCK, CLOEXEC
	{unix.SYS_DUP3, permit},
	{unix.SYS_FSTAT, permit},
	{unix.SYS_FTRUNCATE, permit},
	{unix.SYS_FALLOCATE, permit},
	{unix.SYS_FSYNC, permit},
	{unix.SYS_FDATASYNC, permit},
	{unix.SYS_FADVISE64, permit},
	{unix.SYS_FCHOWN, permit}, // SQLite run as root gives a new journal the database's owner
	{unix.SYS_FCHMOD, permit},
	{unix.SYS_GETDENTS64, permit}, // snapshot rotation lists the folder
	{unix.SYS_IOCTL, ttyQuery},    // is stdin a terminal (TCGETS), nothing else

	// Paths: Landlock decides which files; these only name them.
	{unix.SYS_OPENAT, permit},
	{unix.SYS_NEWFSTATAT, permit},
	{unix.SYS_STATX, permit},
	{unix.SYS_FACCESSAT, permit},
	{unix.SYS_FACCESSAT2, permit},
	{unix.SYS_READLINKAT, permit},
	{unix.SYS_UNLINKAT, permit}, // SQLite's temp files, snapshot rotation
	{unix.SYS_RENAMEAT, permit}, // a finished snapshot takes its name
	{unix.SYS_RENAMEAT2, permit},
	{unix.SYS_MKDIRAT, permit},
	{unix.SYS_GETCWD, permit}, // filepath.Abs
	{sysOpen, permit},
	{sysStat, permit},
	{sysLstat, permit},
	{sysAccess, permit},
	{sysReadlink, permit},
	{sysUnlink, permit},
	{sysRename, permit},

	// The process itself: identity, limits (lowering them only: the hard
	// limits equal the soft ones), randomness, naming heap mappings.
	{unix.SYS_GETPPID, permit}, // the front-died check
	{unix.SYS_GETUID, permit},
	{unix.SYS_GETEUID, permit},
	{unix.SYS_GETGID, permit},
	{unix.SYS_GETEGID, permit},
	{unix.SYS_GETRLIMIT, permit},
	{unix.SYS_SETRLIMIT, permit},
	{unix.SYS_PRLIMIT64, ownLimits},
	{unix.SYS_GETRUSAGE, permit},
	{unix.SYS_GETRANDOM, permit},
	{unix.SYS_UNAME, permit},
	{unix.SYS_PRCTL, vmaName},

	// Never: no socket of any family (UDP, which no Landlock ABI
	// restricts, included), no new program, no tracing. execve and ptrace
	// are what an exploit tries first: they end the process (SIGSYS).
	{unix.SYS_SOCKET, refuse},
	{unix.SYS_SOCKETPAIR, refuse},
	{unix.SYS_EXECVE, fatal},
	{unix.SYS_EXECVEAT, fatal},
	{unix.SYS_PTRACE, fatal},
	// Everything else (mount, bpf, keyctl, io_uring_*, process_vm_*,
	// perf_event_open, userfaultfd, ...) falls to the default: EPERM.
}
