//go:build unix

package ipc

import "syscall"

// pageFaults is the page faults this process has taken (minor and
// major), for the call trace; -1 if unknown.
func pageFaults() int64 {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return -1
	}
	return int64(ru.Minflt + ru.Majflt)
}
