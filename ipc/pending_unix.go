//go:build unix

package ipc

import (
	"io"
	"os"

	"golang.org/x/sys/unix"
)

// pending reports whether r, a file, has bytes to read now (without
// reading them). Anything else, or an error, says no.
func pending(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	fds := []unix.PollFd{{Fd: int32(f.Fd()), Events: unix.POLLIN}}
	n, err := unix.Poll(fds, 0)
	return err == nil && n > 0 && fds[0].Revents&(unix.POLLIN|unix.POLLHUP) != 0
}
