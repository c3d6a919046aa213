//go:build unix

package osfile

import (
	"errors"
	"os"

	"golang.org/x/sys/unix"
)

// lock takes a shared (server) or exclusive (restore) flock without
// waiting. flock locks are separate from the POSIX locks SQLite uses.
func lock(f *os.File, exclusive bool) error {
	how := unix.LOCK_SH
	if exclusive {
		how = unix.LOCK_EX
	}
	err := unix.Flock(int(f.Fd()), how|unix.LOCK_NB)
	if errors.Is(err, unix.EWOULDBLOCK) {
		return ErrHeld
	}
	return err
}

// downgrade converts the flock in place: the kernel removes the exclusive
// lock and inserts the shared one under one lock of its own, so no other
// process's request is granted in between, and a shared request never
// conflicts with the waiting ones that wake up afterwards.
func downgrade(f *os.File) error {
	return unix.Flock(int(f.Fd()), unix.LOCK_SH|unix.LOCK_NB)
}
