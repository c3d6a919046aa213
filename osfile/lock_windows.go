package osfile

import (
	"errors"
	"os"

	"golang.org/x/sys/windows"
)

// lock locks one byte at offset 2^62, far past SQLite's lock bytes and
// any real file size, shared (server) or exclusive (restore), without
// waiting.
func lock(f *os.File, exclusive bool) error {
	flags := uint32(windows.LOCKFILE_FAIL_IMMEDIATELY)
	if exclusive {
		flags |= windows.LOCKFILE_EXCLUSIVE_LOCK
	}
	ol := &windows.Overlapped{OffsetHigh: 1 << 30}
	err := windows.LockFileEx(windows.Handle(f.Fd()), flags, 0, 1, 0, ol)
	if errors.Is(err, windows.ERROR_LOCK_VIOLATION) || errors.Is(err, windows.ERROR_IO_PENDING) {
		return ErrHeld
	}
	return err
}

// downgrade adds a shared lock on the same byte through the same handle
// (allowed beside the handle's own exclusive lock), then unlocks once,
// which removes the exclusive lock first: the shared one stays.
func downgrade(f *os.File) error {
	ol := &windows.Overlapped{OffsetHigh: 1 << 30}
	if err := windows.LockFileEx(windows.Handle(f.Fd()), windows.LOCKFILE_FAIL_IMMEDIATELY, 0, 1, 0, ol); err != nil {
		return err
	}
	ol = &windows.Overlapped{OffsetHigh: 1 << 30}
	return windows.UnlockFileEx(windows.Handle(f.Fd()), 0, 1, 0, ol)
}
