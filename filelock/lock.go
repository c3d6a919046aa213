// Package filelock takes OS advisory locks on whole files without waiting:
// a shared lock that every server holds on its database, and exclusive ones
// for restore, for cleaning what a crash left, and for the one server that
// runs Litestream. The locks are flock on Unix and LockFileEx on Windows,
// so they never interfere with SQLite's own locking.
//
// A server's lock lives on a descriptor of the database file itself, and on
// Unix closing any descriptor of a file drops every POSIX lock (SQLite's)
// the process holds on it: that descriptor must be opened before the
// process's first SQLite connection and closed after its last (DESIGN.md).
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

// Downgrade turns the exclusive lock f holds into a shared one, with no
// moment in which another process could take an exclusive lock between
// the two.
func Downgrade(f *os.File) error { return downgrade(f) }
