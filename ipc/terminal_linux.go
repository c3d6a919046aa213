package ipc

import (
	"os"

	"golang.org/x/sys/unix"
)

// terminal reports whether f is a terminal: it answers a terminal ioctl
// (/dev/null, also a character device, does not).
func terminal(f *os.File) bool {
	_, err := unix.IoctlGetTermios(int(f.Fd()), unix.TCGETS)
	return err == nil
}
