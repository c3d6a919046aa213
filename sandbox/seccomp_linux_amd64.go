package sandbox

import "golang.org/x/sys/unix"

// The filter's architecture and the x86-64 calls arm64 does not have.
const (
	auditArch = unix.AUDIT_ARCH_X86_64
	// x32 calls reach the same kernel through other numbers: killed.
	x32Kill = true

	sysArchPrctl = unix.SYS_ARCH_PRCTL
	sysEpollWait = unix.SYS_EPOLL_WAIT
	sysPoll      = unix.SYS_POLL
	sysOpen      = unix.SYS_OPEN
	sysStat      = unix.SYS_STAT
	sysLstat     = unix.SYS_LSTAT
	sysAccess    = unix.SYS_ACCESS
	sysReadlink  = unix.SYS_READLINK
	sysUnlink    = unix.SYS_UNLINK
	sysRename    = unix.SYS_RENAME
)
