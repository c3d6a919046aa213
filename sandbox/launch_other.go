//go:build !linux

package sandbox

import (
	"fmt"
	"os/exec"
	"runtime"
)

// StartConfined cannot confine a process here; the caller starts it as
// usual (on Windows the front puts it in a Job Object).
func StartConfined(*exec.Cmd, Allowance, <-chan struct{}) (Report, error) {
	return Report{}, fmt.Errorf("%w (%s)", ErrUnsupported, runtime.GOOS)
}
