//go:build !windows

package tokens

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// openNoFollow opens path for reading without following a symbolic link
// in its last element (O_NOFOLLOW: the kernel refuses one, ELOOP), and
// without blocking on a FIFO put in its place (O_NONBLOCK; the caller
// checks the file is regular).
func openNoFollow(path string) (*os.File, error) {
	for {
		fd, err := unix.Open(path, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
		switch {
		case err == nil:
			return os.NewFile(uintptr(fd), path), nil
		case errors.Is(err, unix.EINTR):
			continue
		case errors.Is(err, unix.ELOOP):
			return nil, symlinkError(path)
		}
		return nil, &os.PathError{Op: "open", Path: path, Err: err}
	}
}
