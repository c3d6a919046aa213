package server

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
)

// takeHold opens the server's one descriptor of its database file and
// marks the file as in use with a shared lock (every server holds one;
// restore needs an exclusive one). The lock is an OS advisory lock (flock,
// or LockFileEx far beyond SQLite's lock bytes), so it never interferes
// with SQLite's locking.
//
// The descriptor is opened before the process's first SQLite connection to
// the file and closed after its last (Server.Close), and it is the only
// descriptor of the file this process opens by hand: on Linux closing any
// descriptor of a file drops every POSIX lock the process holds on it,
// SQLite's among them, after which another program's closing connection
// believes it is the last one and deletes the WAL under this server
// (osfile/DESIGN.md). Whatever the server must read from the file
// without SQLite (the header, for the worker sandbox) it reads through this
// descriptor.
//
// With create (the memory profile) the file and its folder are made if
// missing; an empty file is a new SQLite database. Before taking its
// shared lock the server tries for an exclusive one: it gets it only when
// no other server (or restore) has the file, and then runs alone, the one
// moment in which it may clean what a crashed server left; the lock is
// then downgraded in place.
func takeHold(path string, create bool, alone func()) (*os.File, error) {
	var f *os.File
	var err error
	if create {
		if err := osfile.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return nil, fmt.Errorf("create database folder: %w", err)
		}
		f, err = os.OpenFile(path, os.O_RDONLY|os.O_CREATE, 0o644)
		// SQLite syncs the folder the first time it syncs the -wal it
		// creates beside the file, which makes the file's name durable
		// too.
	} else {
		f, err = os.Open(path)
	}
	if err != nil {
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err // the caller names the file
		}
		return nil, err
	}
	// No SQLite connection of this process has the file yet, so closing f
	// on the failures below costs no lock.
	switch err := osfile.LockExclusive(f); {
	case err == nil:
		if alone != nil {
			alone()
		}
		if err := osfile.DowngradeLock(f); err != nil {
			f.Close()
			return nil, err
		}
		return f, nil
	case !errors.Is(err, osfile.ErrHeld):
		f.Close()
		return nil, err
	}
	if err := osfile.LockShared(f); err != nil {
		f.Close()
		if errors.Is(err, osfile.ErrHeld) {
			return nil, errors.New("restore is replacing it right now; start the server again once restore has finished")
		}
		return nil, err
	}
	return f, nil
}
