package ipc

import (
	"os"

	"golang.org/x/sys/windows"
)

// terminal reports whether f is a console.
func terminal(f *os.File) bool {
	var mode uint32
	return windows.GetConsoleMode(windows.Handle(f.Fd()), &mode) == nil
}
