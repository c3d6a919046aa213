//go:build !windows

package osfile

import "os"

// SyncDir makes the names in dir (a rename, a new file or folder) durable.
// Failure only weakens durability across a power loss, so it is not
// reported. A folder is not a database file: opening and closing it
// drops no SQLite lock.
func SyncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		_ = d.Close()
	}
}
