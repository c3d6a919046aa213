package rawsqlite

import (
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Row change kinds reported to a [PreUpdateFunc] (SQLITE_INSERT,
// SQLITE_UPDATE, SQLITE_DELETE).
const (
	ChangeInsert = sqlite3.SQLITE_INSERT
	ChangeUpdate = sqlite3.SQLITE_UPDATE
	ChangeDelete = sqlite3.SQLITE_DELETE
)

// RowChange is one call of SQLite's preupdate hook: a row of Table in
// database DB is about to be inserted, updated or deleted (Op, a Change*
// constant). Depth is 0 for a change the statement itself makes, 1 for one
// made by a trigger it fires or by a foreign-key action (CASCADE, SET NULL,
// SET DEFAULT, which SQLite runs as triggers), 2 for a trigger fired by
// those, and so on.
type RowChange struct {
	Op        int
	DB, Table string
	Depth     int
}

// PreUpdateFunc receives every row change a statement on the connection
// makes, before it is made, triggers and foreign-key actions included. It
// runs on the goroutine stepping the statement and must not use the Conn.
//
// SQLite leaves out its truncate optimization (DELETE without WHERE
// dropping whole b-trees) for statements compiled while a hook is set, so
// every deleted row is reported; a statement compiled before the hook was
// set may still delete all rows unreported. Rows of virtual tables are not
// reported (the writes of FTS5 and R*Tree to their shadow tables are), and
// neither are the rows of a table a DROP TABLE removes.
type PreUpdateFunc func(RowChange)

// preupdates maps a db handle to its Go hook, as authorizers do.
var preupdates = struct {
	sync.RWMutex
	m map[uintptr]PreUpdateFunc
}{m: map[uintptr]PreUpdateFunc{}}

// SetPreUpdateHook installs fn as the connection's preupdate hook
// (sqlite3_preupdate_hook), replacing any earlier one; nil removes it.
func (c *Conn) SetPreUpdateHook(fn PreUpdateFunc) error {
	if !c.usable() {
		return errClosed
	}
	if fn == nil {
		sqlite3.Xsqlite3_preupdate_hook(c.tls, c.db, 0, 0)
		unregisterPreUpdate(c.db)
		return nil
	}
	preupdates.Lock()
	preupdates.m[c.db] = fn
	preupdates.Unlock()
	sqlite3.Xsqlite3_preupdate_hook(c.tls, c.db, funcAddr(preupdateTrampoline), c.db)
	return nil
}

func unregisterPreUpdate(db uintptr) {
	preupdates.Lock()
	delete(preupdates.m, db)
	preupdates.Unlock()
}

// preupdateTrampoline is the C preupdate callback. A panic in the Go hook
// is swallowed: the hook only observes, it cannot fail the change.
func preupdateTrampoline(tls *libc.TLS, _ uintptr, db uintptr, op int32, zDB, zTable uintptr, _, _ int64) {
	preupdates.RLock()
	fn := preupdates.m[db]
	preupdates.RUnlock()
	if fn == nil {
		return
	}
	defer func() { _ = recover() }()
	fn(RowChange{
		Op: int(op), DB: libc.GoString(zDB), Table: libc.GoString(zTable),
		Depth: int(sqlite3.Xsqlite3_preupdate_depth(tls, db)),
	})
}
