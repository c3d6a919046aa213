//go:build unix

package memory

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time this process has used, user and system,
// on all threads: a figure that load on other processes inflates far less
// than wall time.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
