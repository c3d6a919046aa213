package osfile

import (
	"errors"
	"os"
)

// ErrHeld means another process holds a lock that conflicts (a running
// server).
var ErrHeld = errors.New("held by another process")

// LockShared takes a shared lock on f without waiting, or returns ErrHeld.
// It lasts until f is closed.
func LockShared(f *os.File) error { return lock(f, false) }

// LockExclusive takes an exclusive lock on f without waiting, or returns
// ErrHeld. It lasts until f is closed.
func LockExclusive(f *os.File) error { return lock(f, true) }

// DowngradeLock turns the exclusive lock f holds into a shared one, with no
// moment in which another process could take an exclusive lock between
// the two.
func DowngradeLock(f *os.File) error { return downgrade(f) }
