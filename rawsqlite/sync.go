package rawsqlite

import (
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// SyncWAL syncs the write-ahead log of the main database to disk through
// SQLite's own handle of it (the sqlite3_file that
// SQLITE_FCNTL_JOURNAL_POINTER returns, and its xSync method), as a commit
// with synchronous=FULL does. A sync covers the whole file, so it makes
// durable every frame any connection or process has committed to the WAL
// so far. It reports false, and does nothing, when c has no WAL open: the
// database is not in WAL mode, or c has not read it yet (any read opens the
// WAL, and it stays open until c is closed).
//
// It exists for writers that commit with synchronous=NORMAL, so that the
// commit is visible at once, and sync afterwards, once per batch. The file
// is never opened or closed here: a second descriptor of a database file,
// closed, would drop the process's POSIX locks on it.
func (c *Conn) SyncWAL() (bool, error) {
	if !c.usable() {
		return false, errClosed
	}
	if !c.walOpen() {
		return false, nil
	}
	zMain := c.scratch + scratchVa
	cstring(zMain, "main")
	pOut := c.scratch + scratchOut1
	storePtr(pOut, 0)
	if rc := sqlite3.Xsqlite3_file_control(c.tls, c.db, zMain, sqlite3.SQLITE_FCNTL_JOURNAL_POINTER, pOut); rc != sqlite3.SQLITE_OK {
		return false, c.errorFor(rc)
	}
	file := loadPtr(pOut)
	if file == 0 {
		return false, nil
	}
	methods := loadPtr(file) // sqlite3_file.pMethods is its first field
	if methods == 0 {
		return false, nil // the journal of a rollback-mode database, not open
	}
	xSync := loadPtr(methods + unsafe.Offsetof(sqlite3.Tsqlite3_io_methods{}.FxSync))
	sync := *(*func(*libc.TLS, uintptr, int32) int32)(unsafe.Pointer(&struct{ uintptr }{xSync}))
	if rc := sync(c.tls, file, sqlite3.SQLITE_SYNC_NORMAL); rc != sqlite3.SQLITE_OK {
		return false, errorFromCode(rc)
	}
	return true, nil
}

// walOpen reports whether the main database is in WAL mode (reading the
// mode reads the database, which opens the WAL): the journal pointer is
// then the WAL's handle, not a rollback journal.
func (c *Conn) walOpen() bool {
	wal := false
	_ = c.QueryRow("PRAGMA main.journal_mode", func(st *Stmt) error {
		wal = st.ColumnText(0) == "wal"
		return nil
	})
	return wal
}
