//go:build sandboxprobe

package worker

import (
	"net"
	"strconv"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

// probeSyscall makes the probe's system calls directly: "ok", "denied"
// (EPERM or EACCES) or the errno's name. execve and ptrace under the
// filter do not return: the process dies of SIGSYS.
func probeSyscall(a probeAttempt) string {
	var e syscall.Errno
	switch a.Op {
	case "udp":
		// Straight to the socket: Landlock has no rule for UDP.
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0)
		if err != nil {
			return errnoResult(err)
		}
		defer unix.Close(fd)
		host, port, _ := net.SplitHostPort(a.Target)
		p, _ := strconv.Atoi(port)
		to := &unix.SockaddrInet4{Port: p}
		copy(to.Addr[:], net.ParseIP(host).To4())
		return errnoResult(unix.Sendto(fd, []byte("probe"), 0, to))
	case "unix":
		fd, err := unix.Socket(unix.AF_UNIX, unix.SOCK_STREAM, 0)
		if err == nil {
			unix.Close(fd)
		}
		return errnoResult(err)
	case "io_uring_setup":
		var params [120]byte // struct io_uring_params
		var fd uintptr
		fd, _, e = unix.Syscall(unix.SYS_IO_URING_SETUP, 1, uintptr(unsafe.Pointer(&params)), 0)
		if e == 0 {
			unix.Close(int(fd))
		}
	case "bpf":
		// An unknown command: EINVAL from the kernel, EPERM from the filter.
		_, _, e = unix.Syscall(unix.SYS_BPF, 0xffff, 0, 0)
	case "execve":
		return errnoResult(unix.Exec(a.Target, []string{a.Target}, nil))
	case "ptrace":
		// No such process: ESRCH from the kernel.
		_, _, e = unix.Syscall6(unix.SYS_PTRACE, unix.PTRACE_ATTACH, 0x3fffffff, 0, 0, 0, 0)
	default:
		return "unknown op"
	}
	if e == 0 {
		return "ok"
	}
	return errnoResult(e)
}

func errnoResult(err error) string {
	switch err {
	case nil:
		return "ok"
	case unix.EPERM, unix.EACCES:
		return "denied"
	}
	if e, ok := err.(syscall.Errno); ok {
		return unix.ErrnoName(e)
	}
	return err.Error()
}
