//go:build !windows

package tests

import "os"

// removeTree removes dir and what it holds.
func removeTree(dir string) error { return os.RemoveAll(dir) }
