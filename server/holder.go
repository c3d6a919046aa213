package server

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/filelock"
)

// Restore copies snapshot over db while no server holds db. Stale -wal and
// -shm files of db are removed first: they belong to the replaced content.
func Restore(db, snapshot string) error {
	src, err := os.ReadFile(snapshot)
	if err != nil {
		return fmt.Errorf("read snapshot: %w", err)
	}
	if !bytes.HasPrefix(src, []byte("SQLite format 3\x00")) {
		return fmt.Errorf("%s is not a SQLite database; pick a file from the snapshot folder", snapshot)
	}
	f, err := os.OpenFile(db, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := filelock.Exclusive(f); err != nil {
		if errors.Is(err, filelock.ErrHeld) {
			return fmt.Errorf("a server is using %s; stop it (close the MCP host's session) and run restore again", db)
		}
		return err
	}
	for _, suffix := range []string{"-wal", "-shm", "-journal"} {
		if err := os.Remove(db + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("remove stale %s: %w", db+suffix, err)
		}
	}
	// Written through the locked handle, so no server can open the file
	// half-way; a failed restore can be run again from the same snapshot.
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return err
	}
	if _, err := f.Write(src); err != nil {
		return err
	}
	if err := f.Truncate(int64(len(src))); err != nil {
		return err
	}
	return f.Sync()
}
