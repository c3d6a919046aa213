//go:build unix && !linux

package restore

import "os"

// lockOwners asks F_GETLK (there is no /proc/locks here).
func lockOwners(f *os.File) (map[int64][]int, error) { return getlkOwners(f) }

// programName is not known without /proc.
func programName(int) string { return "" }
