//go:build !linux

package sandbox

import (
	"fmt"
	"runtime"
)

// SeccompSupported reports that seccomp is Linux's.
func SeccompSupported() error {
	return fmt.Errorf("%w (%s)", ErrNoSeccomp, runtime.GOOS)
}

// RestrictSyscalls does nothing here; the error says so.
func RestrictSyscalls() error { return SeccompSupported() }
