//go:build linux && (amd64 || arm64) && seccomplog

package sandbox

import "golang.org/x/sys/unix"

// This file exists only in builds with the seccomplog tag (never a
// release): a call the table does not list runs and the kernel logs it
// ("audit: type=1326 ... syscall=N" in dmesg), so that one run of the
// end-to-end suite (GOFLAGS=-tags=seccomplog) finds every miss instead
// of stopping at the first refused call. Socket, exec and ptrace keep
// their own actions.
const missAction = unix.SECCOMP_RET_LOG
