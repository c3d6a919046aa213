//go:build !linux && !windows

package ipc

import "os"

// terminal reports whether f is a character device other than /dev/null,
// close enough to a terminal where no ioctl is at hand.
func terminal(f *os.File) bool {
	fi, err := f.Stat()
	if err != nil || fi.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	null, err := os.Stat(os.DevNull)
	return err != nil || !os.SameFile(fi, null)
}
