package rawsqlite

import (
	"errors"
	"fmt"
	"os"
	"time"

	sqlite3 "modernc.org/sqlite/lib"
)

// backupRetry bounds how long Backup keeps retrying while the source is
// busy or locked; backupPause is the wait between tries. Tests shorten them.
var (
	backupRetry = 5 * time.Second
	backupPause = 10 * time.Millisecond
)

// Backup copies the "main" database of c into a new file at dstPath with
// SQLite's online backup API, all pages in one step so that the copy is
// one consistent snapshot. dstPath must not exist (it is created
// exclusively, so an existing file is never overwritten). If the source is
// busy or locked, Backup retries for a few seconds. On failure the
// partially written file is removed.
func (c *Conn) Backup(dstPath string) error {
	return c.BackupSteps(dstPath, -1, nil)
}

// BackupSteps is Backup in steps of pages pages (-1: all at once). After
// each step it calls progress (when not nil) with the pages copied and the
// source's page count; progress returning false stops the backup, which
// then fails with ResultInterrupt and removes the file.
//
// The copy is consistent however many steps it takes: unless c already has
// a transaction open, BackupSteps holds a read transaction on c from the
// first step to the last, so no step sees another writer's commit (and the
// backup never restarts). The destination has no journal (it is a new file
// that is removed on failure) and is not synced: callers that keep it sync
// it themselves.
func (c *Conn) BackupSteps(dstPath string, pages int, progress func(done, total int) bool) (err error) {
	if !c.usable() {
		return errClosed
	}
	f, err := os.OpenFile(dstPath, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("rawsqlite: backup: %w", err)
	}
	if err := f.Close(); err != nil {
		os.Remove(dstPath)
		return fmt.Errorf("rawsqlite: backup: %w", err)
	}
	defer func() {
		if err != nil {
			// The journal goes with the file; it is ours too if it exists.
			os.Remove(dstPath + "-journal")
			os.Remove(dstPath)
		}
	}()

	dst, err := Open(dstPath, ReadWrite)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := dst.Close(); cerr != nil && err == nil {
			err = cerr
		}
	}()
	if err := dst.Exec("PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF"); err != nil {
		return err
	}
	if pages > 0 && c.Autocommit() {
		// BEGIN starts no read transaction until something reads; the
		// count does, and the transaction then lasts until COMMIT.
		if err := c.Exec("BEGIN; SELECT count(*) FROM sqlite_schema"); err != nil {
			return err
		}
		defer func() {
			if cerr := c.Exec("COMMIT"); cerr != nil && err == nil {
				err = cerr
			}
		}()
	}
	return c.backupTo(dst, pages, progress)
}

// BackupTo copies the "main" database of c over the "main" database of
// dst, an open connection, with SQLite's online backup API: SQLite holds
// dst's write lock from the first step to the last and commits the copy as
// one transaction, so other connections to dst's file see the old content
// or the new, and readers in WAL mode keep their snapshots.
//
// The first step copies one page, the others pages pages each (-1: all
// the rest). progress (when not nil) runs after each step with the pages
// copied and the total; the first call comes with dst's write lock held and
// nothing committed (unless the source has one page only: an empty
// database), so a caller can read dst's current state through another
// connection, knowing no one can change it before the copy replaces it.
// progress returning false stops the copy and rolls dst back
// (ResultInterrupt). dst must have no transaction open; in WAL mode its
// page size must be c's.
func (c *Conn) BackupTo(dst *Conn, pages int, progress func(done, total int) bool) error {
	if !c.usable() || !dst.usable() {
		return errClosed
	}
	return c.backup(dst, 1, pages, progress)
}

func (c *Conn) backupTo(dst *Conn, pages int, progress func(done, total int) bool) error {
	return c.backup(dst, pages, pages, progress)
}

// backup runs the copy: a first step of first pages, then steps of pages.
func (c *Conn) backup(dst *Conn, first, pages int, progress func(done, total int) bool) error {
	const name = "main"
	zName := c.tls.Alloc(len(name) + 1)
	defer c.tls.Free(len(name) + 1)
	cstring(zName, name)

	// Both handles are used on this goroutine, so the source's TLS serves.
	b := sqlite3.Xsqlite3_backup_init(c.tls, dst.db, zName, c.db, zName)
	if b == 0 {
		// backup_init leaves its error on the destination handle.
		return dst.errorFor(sqlite3.Xsqlite3_errcode(dst.tls, dst.db))
	}
	if pages <= 0 {
		pages = -1
	}
	step := first
	if step <= 0 {
		step = -1
	}
	deadline := time.Now().Add(backupRetry)
	var rc int32
	stopped := false
	for {
		rc = sqlite3.Xsqlite3_backup_step(c.tls, b, int32(clampInt32(step)))
		if rc&0xff == sqlite3.SQLITE_BUSY || rc&0xff == sqlite3.SQLITE_LOCKED {
			if time.Now().Before(deadline) {
				time.Sleep(backupPause)
				continue
			}
		}
		if rc != sqlite3.SQLITE_OK && rc != sqlite3.SQLITE_DONE {
			break
		}
		if progress != nil {
			total := int(sqlite3.Xsqlite3_backup_pagecount(c.tls, b))
			done := total - int(sqlite3.Xsqlite3_backup_remaining(c.tls, b))
			if !progress(done, total) && rc != sqlite3.SQLITE_DONE {
				stopped = true
				break
			}
		}
		if rc == sqlite3.SQLITE_DONE {
			break
		}
		step = pages
		deadline = time.Now().Add(backupRetry)
	}
	// finish reports the step's error again and records it on dst.
	frc := sqlite3.Xsqlite3_backup_finish(c.tls, b)
	if stopped {
		return &Error{Code: ResultInterrupt, Msg: "rawsqlite: backup stopped"}
	}
	if rc == sqlite3.SQLITE_DONE && frc == sqlite3.SQLITE_OK {
		return nil
	}
	if rc == sqlite3.SQLITE_DONE || rc == sqlite3.SQLITE_OK {
		rc = frc
	}
	if rc == sqlite3.SQLITE_OK {
		// Stopped short of DONE without an error: should not happen.
		return errors.New("rawsqlite: backup: incomplete")
	}
	return dst.errorFor(rc)
}
