// Package filelock takes OS advisory locks on whole files without waiting:
// a shared lock that every server holds on its database, and exclusive ones
// for restore, for cleaning what a crash left, and for the one server that
// runs Litestream. The locks are flock on Unix and LockFileEx on Windows,
// so they never interfere with SQLite's own locking.
package filelock

import (
	"errors"
	"os"
)

// ErrHeld means another process holds a lock that conflicts (a running
// server).
var ErrHeld = errors.New("held by another process")

// Shared takes a shared lock on f without waiting, or returns ErrHeld.
// It lasts until f is closed.
func Shared(f *os.File) error { return lock(f, false) }

// Exclusive takes an exclusive lock on f without waiting, or returns
// ErrHeld. It lasts until f is closed.
func Exclusive(f *os.File) error { return lock(f, true) }
