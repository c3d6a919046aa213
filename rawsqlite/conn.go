package rawsqlite

import (
	"math"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"time"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// OpenFlags choose how [Open] opens a database. Exactly one of ReadOnly and
// ReadWrite must be set; Create needs ReadWrite.
//
// Every connection is also opened with SQLITE_OPEN_NOMUTEX (a Conn belongs to
// one goroutine, so SQLite's per-connection mutex would only cost time;
// sqlite3_interrupt needs no mutex) and SQLITE_OPEN_EXRESCODE (extended
// result codes). URI filenames are not enabled: "file:x?mode=rw" names a
// file of that name, so a path can never smuggle in open options.
type OpenFlags int

// Open flags, with the values of the matching SQLITE_OPEN_* bits.
const (
	ReadOnly  OpenFlags = sqlite3.SQLITE_OPEN_READONLY
	ReadWrite OpenFlags = sqlite3.SQLITE_OPEN_READWRITE
	Create    OpenFlags = sqlite3.SQLITE_OPEN_CREATE
	// NoFollow refuses a path whose last element is a symbolic link.
	NoFollow OpenFlags = sqlite3.SQLITE_OPEN_NOFOLLOW
)

// Scratch layout: C memory reused by every call on a Conn for out-params,
// so that prepare and db_config do not malloc.
const (
	scratchOut1  = 0  // sqlite3_stmt** / sqlite3** out-parameter
	scratchOut2  = 8  // const char** tail out-parameter
	scratchInt   = 16 // int* result of sqlite3_db_config
	scratchVa    = 24 // va_list area, 2 slots of 8 bytes
	scratchBytes = 64
)

// Conn is one SQLite connection. See the package documentation for which
// methods may be called concurrently.
type Conn struct {
	tls     *libc.TLS
	db      uintptr
	scratch uintptr

	// mu guards db and closed against Interrupt/IsInterrupted running on
	// other goroutines while the owner closes the connection.
	mu     sync.Mutex
	closed bool
	// oomStop: the progress handler stops statements whose allocation
	// failed (StopOnAllocationFailure).
	oomStop bool
	// stmts counts unfinalized statements: if Close leaves some behind,
	// SQLite keeps the handle as a zombie and the TLS must outlive Close
	// until the last one is finalized.
	stmts int
}

var errClosed = &Error{Code: ResultMisuse, Msg: "rawsqlite: connection is closed"}

// Open opens the database at path with sqlite3_open_v2. On failure the
// handle SQLite may have allocated is closed and no Conn is returned.
func Open(path string, flags OpenFlags) (*Conn, error) {
	rw := flags & (ReadOnly | ReadWrite)
	switch {
	case flags&^(ReadOnly|ReadWrite|Create|NoFollow) != 0:
		return nil, &Error{Code: ResultMisuse, Msg: "rawsqlite: unknown open flags"}
	case rw != ReadOnly && rw != ReadWrite:
		return nil, &Error{Code: ResultMisuse, Msg: "rawsqlite: open needs exactly one of ReadOnly and ReadWrite"}
	case flags&Create != 0 && rw != ReadWrite:
		return nil, &Error{Code: ResultMisuse, Msg: "rawsqlite: Create needs ReadWrite"}
	case strings.IndexByte(path, 0) >= 0:
		return nil, &Error{Code: ResultCantOpen, Msg: "rawsqlite: path contains a NUL byte"}
	}
	return openV2(path, int32(flags))
}

// openV2 opens name (a path, or a URI with SQLITE_OPEN_URI in flags).
func openV2(path string, flags int32) (*Conn, error) {
	if rc := ensureInit(); rc != sqlite3.SQLITE_OK {
		return nil, errorFromCode(rc)
	}

	tls := libc.NewTLS()
	scratch := libc.Xmalloc(tls, scratchBytes)
	if scratch == 0 {
		tls.Close()
		return nil, errorFromCode(sqlite3.SQLITE_NOMEM)
	}
	c := &Conn{tls: tls, scratch: scratch}

	zPath := tls.Alloc(len(path) + 1)
	cstring(zPath, path)
	storePtr(scratch+scratchOut1, 0)
	cflags := flags | sqlite3.SQLITE_OPEN_NOMUTEX | sqlite3.SQLITE_OPEN_EXRESCODE
	rc := sqlite3.Xsqlite3_open_v2(tls, zPath, scratch+scratchOut1, cflags, 0)
	tls.Free(len(path) + 1)
	db := loadPtr(scratch + scratchOut1)
	if rc != sqlite3.SQLITE_OK {
		var err error
		if db != 0 {
			c.db = db
			err = c.errorFor(rc)
			sqlite3.Xsqlite3_close_v2(tls, db)
			c.db = 0
		} else {
			err = errorFromCode(rc)
		}
		c.release()
		return nil, err
	}
	c.db = db
	// Belt and braces: EXRESCODE already asked for this.
	sqlite3.Xsqlite3_extended_result_codes(tls, db, 1)
	return c, nil
}

// OpenImmutable opens the database file at path read-only as a file that
// no one changes (SQLite's immutable=1 URI parameter): no locks are taken
// and no -wal or -shm is read or created beside it, so reading a snapshot
// leaves its folder as it was. A file with a non-empty -wal beside it (a
// copy someone opened and changed by hand) is opened read-only instead,
// so the changes in that log are read too. The path is escaped into a
// file: URI here, so it can never carry open options of its own.
func OpenImmutable(path string) (*Conn, error) {
	param := "immutable=1"
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		param = "mode=ro"
	}
	return openV2(FileURI(path, param), int32(ReadOnly)|sqlite3.SQLITE_OPEN_URI)
}

// FileURI is path (made absolute) as a SQLite file: URI with the query q
// (such as "mode=ro"; "" for none). Every byte of the path outside
// [A-Za-z0-9/._~:-] is percent-escaped, which SQLite decodes, so "?", "#"
// and "%" in a path name exactly that file. (Written here rather than with
// net/url, which the lean worker binary does not link.)
func FileURI(path, q string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	p := filepath.ToSlash(path)
	if runtime.GOOS == "windows" && !strings.HasPrefix(p, "/") {
		p = "/" + p // file:///C:/dir/x.db
	}
	const hex = "0123456789ABCDEF"
	b := make([]byte, 0, len("file://")+len(p)+len(q)+1)
	b = append(b, "file://"...)
	for i := 0; i < len(p); i++ {
		switch c := p[i]; {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9', strings.IndexByte("/._~:-", c) >= 0:
			b = append(b, c)
		default:
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	if q != "" {
		b = append(b, '?')
		b = append(b, q...)
	}
	return string(b)
}

// release frees the C resources owned by the Go side of the Conn.
func (c *Conn) release() {
	if c.scratch != 0 {
		libc.Xfree(c.tls, c.scratch)
		c.scratch = 0
	}
	if c.tls != nil {
		c.tls.Close()
		c.tls = nil
	}
}

// Close closes the connection with sqlite3_close_v2 and removes its
// authorizer and preupdate hook. It finalizes nothing: callers finalize their statements. If
// some are still open, SQLite keeps the handle alive until the last one is
// finalized. Close is idempotent.
func (c *Conn) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return nil
	}
	unregisterAuthorizer(c.db)
	sqlite3.Xsqlite3_preupdate_hook(c.tls, c.db, 0, 0)
	unregisterPreUpdate(c.db)
	rc := sqlite3.Xsqlite3_close_v2(c.tls, c.db)
	if rc != sqlite3.SQLITE_OK {
		// close_v2 only fails on misuse; the handle is still ours.
		return c.errorFor(rc)
	}
	c.db = 0
	c.closed = true
	if c.stmts == 0 {
		c.release()
	}
	return nil
}

// usable reports whether the owner may call into SQLite on this Conn.
func (c *Conn) usable() bool { return c != nil && !c.closed }

// Exec runs every statement in sql, in order, and discards any rows. It is
// meant for trusted setup SQL (PRAGMAs, BEGIN/COMMIT), never agent SQL: it
// does not stop after the first statement.
func (c *Conn) Exec(sql string) error {
	for {
		st, tail, err := c.Prepare(sql)
		if err != nil {
			return err
		}
		if st == nil {
			return nil
		}
		if err := drain(st, nil); err != nil {
			st.Finalize()
			return err
		}
		if err := st.Finalize(); err != nil {
			return err
		}
		sql = tail
	}
}

// Prepare compiles the first statement of sql (sqlite3_prepare_v3). tail is
// the part of sql that SQLite did not consume, byte for byte, computed from
// SQLite's tail pointer; [IsBlank] tells whether it holds another statement.
// When sql holds only white space, comments or semicolons, st is nil and err
// is nil. The authorizer, if any, runs during Prepare.
//
// SQL containing a NUL byte is refused: C SQLite would stop reading at the
// NUL, so the text after it could never be checked.
func (c *Conn) Prepare(sql string) (st *Stmt, tail string, err error) {
	if !c.usable() {
		return nil, "", errClosed
	}
	if strings.IndexByte(sql, 0) >= 0 {
		return nil, "", &Error{Code: ResultError, Msg: "SQL contains a NUL byte"}
	}
	if len(sql) >= math.MaxInt32 {
		return nil, "", &Error{Code: ResultTooBig, Msg: "string or blob too big"}
	}
	n := len(sql) + 1
	zSQL := c.tls.Alloc(n)
	defer c.tls.Free(n)
	cstring(zSQL, sql)
	pStmt, pTail := c.scratch+scratchOut1, c.scratch+scratchOut2
	storePtr(pStmt, 0)
	storePtr(pTail, 0)
	// Passing the length including the NUL saves SQLite a copy.
	rc := sqlite3.Xsqlite3_prepare_v3(c.tls, c.db, zSQL, int32(n), 0, pStmt, pTail)
	if rc != sqlite3.SQLITE_OK {
		return nil, "", c.errorFor(rc)
	}
	if zTail := loadPtr(pTail); zTail >= zSQL && zTail <= zSQL+uintptr(len(sql)) {
		tail = sql[zTail-zSQL:]
	}
	p := loadPtr(pStmt)
	if p == 0 {
		return nil, tail, nil
	}
	c.stmts++
	return &Stmt{c: c, p: p}, tail, nil
}

// Limit sets run-time limit id to newVal and returns its previous value
// (sqlite3_limit). A negative newVal only reads the limit. SQLite silently
// caps newVal at the compile-time maximum.
func (c *Conn) Limit(id, newVal int) (old int) {
	if !c.usable() {
		return -1
	}
	return int(sqlite3.Xsqlite3_limit(c.tls, c.db, int32(id), int32(clampInt32(newVal))))
}

// DBConfig sets the boolean connection option op (one of the Config*
// constants) and returns its new value as SQLite reports it.
func (c *Conn) DBConfig(op int, on bool) (bool, error) {
	if !c.usable() {
		return false, errClosed
	}
	if op < configFirstBool || op >= configEnd {
		return false, &Error{Code: ResultMisuse, Msg: "rawsqlite: not a boolean db_config option"}
	}
	pRes := c.scratch + scratchInt
	storePtr(pRes, 0)
	va := libc.VaList(c.scratch+scratchVa, libc.Bool32(on), pRes)
	if rc := sqlite3.Xsqlite3_db_config(c.tls, c.db, int32(op), va); rc != sqlite3.SQLITE_OK {
		return false, c.errorFor(rc)
	}
	return loadInt32(pRes) != 0, nil
}

// Interrupt asks SQLite to stop the statements running on c at their next
// opportunity; they then fail with [ResultInterrupt] ("interrupted"). Safe
// from any goroutine, also while a Step runs and after Close.
//
// An interrupt that arrives while no statement runs is lost: the next
// statement to start clears it (sqlite3_step resets the flag when no other
// statement is active). Callers that may interrupt before Step starts must
// keep their own flag too.
func (c *Conn) Interrupt() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.db == 0 {
		return
	}
	// A fresh TLS: the owner's TLS may be in use by the running Step.
	withTLS(func(tls *libc.TLS) struct{} {
		sqlite3.Xsqlite3_interrupt(tls, c.db)
		return struct{}{}
	})
}

// IsInterrupted reports whether an interrupt is pending on c
// (sqlite3_is_interrupted). Safe from any goroutine.
func (c *Conn) IsInterrupted() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed || c.db == 0 {
		return false
	}
	return withTLS(func(tls *libc.TLS) bool {
		return sqlite3.Xsqlite3_is_interrupted(tls, c.db) != 0
	})
}

// BusyTimeout makes SQLite retry for up to d when the database is locked
// (sqlite3_busy_timeout); d <= 0 turns retrying off.
func (c *Conn) BusyTimeout(d time.Duration) error {
	if !c.usable() {
		return errClosed
	}
	ms := d.Milliseconds()
	if ms < 0 {
		ms = 0
	}
	if rc := sqlite3.Xsqlite3_busy_timeout(c.tls, c.db, int32(min(ms, math.MaxInt32))); rc != sqlite3.SQLITE_OK {
		return c.errorFor(rc)
	}
	return nil
}

// Changes returns the rows changed by the most recent INSERT, UPDATE or
// DELETE on c (sqlite3_changes64), not counting trigger or FK actions.
func (c *Conn) Changes() int64 {
	if !c.usable() {
		return 0
	}
	return sqlite3.Xsqlite3_changes64(c.tls, c.db)
}

// TotalChanges returns the rows changed since c was opened, triggers
// included (sqlite3_total_changes64).
func (c *Conn) TotalChanges() int64 {
	if !c.usable() {
		return 0
	}
	return sqlite3.Xsqlite3_total_changes64(c.tls, c.db)
}

// LastInsertRowID returns the rowid of the most recent successful INSERT on
// c (sqlite3_last_insert_rowid).
func (c *Conn) LastInsertRowID() int64 {
	if !c.usable() {
		return 0
	}
	return sqlite3.Xsqlite3_last_insert_rowid(c.tls, c.db)
}

// Autocommit reports whether c is outside an explicit transaction
// (sqlite3_get_autocommit).
func (c *Conn) Autocommit() bool {
	if !c.usable() {
		return true
	}
	return sqlite3.Xsqlite3_get_autocommit(c.tls, c.db) != 0
}

// Complete reports whether sql ends with a complete statement
// (sqlite3_complete): a semicolon outside strings, comments and triggers'
// bodies. SQL containing a NUL byte is never complete.
func Complete(sql string) bool {
	if strings.IndexByte(sql, 0) >= 0 {
		return false
	}
	ensureInit()
	return withTLS(func(tls *libc.TLS) bool {
		n := len(sql) + 1
		z := tls.Alloc(n)
		defer tls.Free(n)
		cstring(z, sql)
		return sqlite3.Xsqlite3_complete(tls, z) != 0
	})
}

func clampInt32(v int) int {
	return max(math.MinInt32, min(v, math.MaxInt32))
}
