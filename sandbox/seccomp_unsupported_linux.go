//go:build linux && !amd64 && !arm64

package sandbox

import (
	"fmt"
	"runtime"
)

// errNoTable refuses: a confined worker here would run without the
// allowlist, and running open is not what "confined" means.
var errNoTable = fmt.Errorf("sandbox: no system call table for %s, so workers cannot be confined here; run with --sandbox off to run them unconfined (Landlock and seccomp both off)", runtime.GOARCH)

// SeccompSupported refuses on an architecture without a table.
func SeccompSupported() error { return errNoTable }

// RestrictSyscalls refuses on an architecture without a table.
func RestrictSyscalls() error { return errNoTable }
