//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"
)

// Supported reports that this platform has no worker sandbox of this
// package. (On Windows the front puts each worker in a Job Object.)
func Supported() (int, error) {
	return 0, fmt.Errorf("%w (%s); the worker runs with its resource limits only", ErrUnsupported, runtime.GOOS)
}

// Apply confines nothing here; the report says why.
func Apply(Allowance, Options) (Report, error) {
	_, err := Supported()
	return Report{Missing: err.Error()}, nil
}

// verifyConfined cannot hold here: no process is re-executed confined.
func verifyConfined(Report) error {
	return fmt.Errorf("sandbox: %s is set, but %s has no sandbox re-execution", EnvConfined, runtime.GOOS)
}
