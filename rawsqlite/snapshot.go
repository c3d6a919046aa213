package rawsqlite

import (
	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Snapshot is the state of a WAL database that one connection's read
// transaction sees, for another connection to read the same state
// (sqlite3_snapshot_get and sqlite3_snapshot_open on the main database).
// Free it when done; it may be freed while transactions that opened it go
// on.
type Snapshot struct {
	p uintptr
}

// Snapshot records the state that c's open read transaction sees. It fails
// unless the database is in WAL mode and c has begun a transaction (BEGIN)
// and read from the database in it.
func (c *Conn) Snapshot() (*Snapshot, error) {
	if !c.usable() {
		return nil, errClosed
	}
	p, err := c.onMain(func(zMain, out uintptr) int32 {
		return sqlite3.Xsqlite3_snapshot_get(c.tls, c.db, zMain, out)
	})
	if err != nil {
		return nil, err
	}
	return &Snapshot{p: p}, nil
}

// onMain calls an SQLite function that takes the schema name "main" and
// an out-pointer, and returns what it stored there.
func (c *Conn) onMain(call func(zMain, out uintptr) int32) (uintptr, error) {
	z := c.tls.Alloc(len("main") + 1)
	defer c.tls.Free(len("main") + 1)
	cstring(z, "main")
	out := c.scratch + scratchOut1
	storePtr(out, 0)
	if rc := call(z, out); rc != sqlite3.SQLITE_OK {
		return 0, c.errorFor(rc)
	}
	return loadPtr(out), nil
}

// OpenSnapshot makes the transaction that c has begun (BEGIN, nothing read
// yet) read the state s recorded. It fails if the database is not in WAL
// mode, if c has not read the database before (SQLite learns the file is
// in WAL mode from its first read), or if that state is gone (the WAL was
// restarted since).
func (c *Conn) OpenSnapshot(s *Snapshot) error {
	if !c.usable() {
		return errClosed
	}
	if s == nil || s.p == 0 {
		return &Error{Code: ResultMisuse, Msg: "rawsqlite: snapshot is freed"}
	}
	_, err := c.onMain(func(zMain, _ uintptr) int32 {
		return sqlite3.Xsqlite3_snapshot_open(c.tls, c.db, zMain, s.p)
	})
	return err
}

// Free releases s; Free on a freed snapshot does nothing.
func (s *Snapshot) Free() {
	if s == nil || s.p == 0 {
		return
	}
	withTLS(func(tls *libc.TLS) struct{} {
		sqlite3.Xsqlite3_snapshot_free(tls, s.p)
		return struct{}{}
	})
	s.p = 0
}
