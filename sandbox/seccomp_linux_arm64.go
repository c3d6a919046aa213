package sandbox

import "golang.org/x/sys/unix"

// The filter's architecture; arm64 has only the *at forms of the legacy
// x86-64 calls (-1: not in the table).
const (
	auditArch = unix.AUDIT_ARCH_AARCH64
	x32Kill   = false

	sysArchPrctl = -1
	sysEpollWait = -1
	sysPoll      = -1
	sysOpen      = -1
	sysStat      = -1
	sysLstat     = -1
	sysAccess    = -1
	sysReadlink  = -1
	sysUnlink    = -1
	sysRename    = -1
)
