package ipc

import (
	"io"
	"os"
	"unsafe"

	"golang.org/x/sys/windows"
)

var procPeekNamedPipe = windows.NewLazySystemDLL("kernel32.dll").NewProc("PeekNamedPipe")

// pending reports whether r, a pipe, has bytes to read now (without
// reading them). Anything else, or an error, says no.
func pending(r io.Reader) bool {
	f, ok := r.(*os.File)
	if !ok {
		return false
	}
	var avail uint32
	ok1, _, _ := procPeekNamedPipe.Call(f.Fd(), 0, 0, 0, uintptr(unsafe.Pointer(&avail)), 0)
	return ok1 != 0 && avail > 0
}
