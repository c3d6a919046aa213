//go:build !windows

package worker

import "os"

// syncDir makes a rename in dir durable. Failure only weakens durability
// across a power loss, so it is not reported.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
