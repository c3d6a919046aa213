package server

import (
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/filelock"
)

// holdShared marks the database as in use by this server until the file is
// closed: every server holds a shared lock, restore (package restore) needs an
// exclusive one.
// The lock is an OS advisory lock (flock, or LockFileEx far beyond SQLite's
// own lock bytes), so it never interferes with SQLite's locking.
func holdShared(path string) (*os.File, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	if err := filelock.Shared(f); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}
