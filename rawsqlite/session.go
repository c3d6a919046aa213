package rawsqlite

import (
	"encoding/binary"
	"math"
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// Session records the row changes made on its connection, for an undo
// (SQLite's session extension, sqlite3session_*). It belongs to its Conn's
// goroutine; delete it before closing the Conn.
//
// Every table of the main database is attached (sqlite3session_attach
// with NULL), so rows that triggers and foreign-key actions change are
// recorded too, and tables without a declared PRIMARY KEY are keyed by
// their rowid (SQLITE_SESSION_OBJCONFIG_ROWID). The session extension
// never sees virtual tables, and leaves out rows whose PRIMARY KEY holds
// a NULL: callers must not rely on a session for those. Statements
// prepared before NewSession are expired, so that they compile again with
// the session's hooks before their next step. A session takes the
// connection's preupdate hook: do not use [Conn.SetPreUpdateHook] on a
// connection while a session records on it.
type Session struct {
	c  *Conn
	p  uintptr
	id uintptr
}

// sessionFilters maps a session's id to the table filter its C callback
// asks; the C side carries only the id back.
var sessionFilters = struct {
	sync.Mutex
	next uintptr
	m    map[uintptr]func(table string) bool
}{m: map[uintptr]func(string) bool{}}

// NewSession starts recording the changes made on c to the tables of its
// main database for which record returns true (nil: every table). record
// runs on c's goroutine when a table is first written.
func (c *Conn) NewSession(record func(table string) bool) (*Session, error) {
	if !c.usable() {
		return nil, errClosed
	}
	p, err := c.onMain(func(zMain, out uintptr) int32 {
		return sqlite3.Xsqlite3session_create(c.tls, c.db, zMain, out)
	})
	if err != nil {
		return nil, err
	}
	s := &Session{c: c, p: p}
	// The rowid option must be set before any table is attached.
	arg := c.scratch + scratchInt
	storeInt32(arg, 1)
	rc := sqlite3.Xsqlite3session_object_config(c.tls, s.p, sqlite3.SQLITE_SESSION_OBJCONFIG_ROWID, arg)
	if rc != sqlite3.SQLITE_OK || loadInt32(arg) != 1 {
		s.Delete()
		return nil, &Error{Code: ResultMisuse, Msg: "rawsqlite: this SQLite cannot key tables without a PRIMARY KEY by rowid in a session"}
	}
	if record != nil {
		sessionFilters.Lock()
		sessionFilters.next++
		s.id = sessionFilters.next
		sessionFilters.m[s.id] = record
		sessionFilters.Unlock()
		sqlite3.Xsqlite3session_table_filter(c.tls, s.p, funcAddr(sessionFilterTrampoline), s.id)
	}
	if rc := sqlite3.Xsqlite3session_attach(c.tls, s.p, 0); rc != sqlite3.SQLITE_OK {
		s.Delete()
		return nil, errorFromCode(rc)
	}
	// Statements compiled before the session began must compile again
	// with its hooks in place, or some changes would escape it.
	if err := c.ExpireStatements(); err != nil {
		s.Delete()
		return nil, err
	}
	return s, nil
}

// sessionFilterTrampoline is the table filter's C callback. A panic, or
// no registered filter, records the table: leaving a table out silently
// would lose its rows.
func sessionFilterTrampoline(_ *libc.TLS, id uintptr, zTab uintptr) (rc int32) {
	sessionFilters.Lock()
	fn := sessionFilters.m[id]
	sessionFilters.Unlock()
	if fn == nil {
		return 1
	}
	defer func() {
		if recover() != nil {
			rc = 1
		}
	}()
	return libc.Bool32(fn(libc.GoString(zTab)))
}

// Changeset returns the changes recorded so far as a changeset
// (sqlite3session_changeset), copied into Go memory.
func (s *Session) Changeset() ([]byte, error) {
	if s == nil || s.p == 0 || !s.c.usable() {
		return nil, errClosed
	}
	c := s.c
	pn, pp := c.scratch+scratchInt, c.scratch+scratchOut1
	storeInt32(pn, 0)
	storePtr(pp, 0)
	if rc := sqlite3.Xsqlite3session_changeset(c.tls, s.p, pn, pp); rc != sqlite3.SQLITE_OK {
		return nil, errorFromCode(rc)
	}
	return takeBuffer(c.tls, loadPtr(pp), int(loadInt32(pn))), nil
}

// Delete ends the session; Delete on a deleted session does nothing.
func (s *Session) Delete() {
	if s == nil || s.p == 0 {
		return
	}
	if s.c.usable() {
		sqlite3.Xsqlite3session_delete(s.c.tls, s.p)
	}
	s.p = 0
	if s.id != 0 {
		sessionFilters.Lock()
		delete(sessionFilters.m, s.id)
		sessionFilters.Unlock()
	}
}

// takeBuffer copies n bytes that SQLite allocated at p into Go memory and
// frees them.
func takeBuffer(tls *libc.TLS, p uintptr, n int) []byte {
	if p == 0 {
		return nil
	}
	out := make([]byte, n)
	copy(out, cmem(p, n))
	sqlite3.Xsqlite3_free(tls, p)
	return out
}

// cbuffer copies b into memory from sqlite3_malloc64; the caller frees it.
func cbuffer(tls *libc.TLS, b []byte) (uintptr, error) {
	if len(b) >= math.MaxInt32 {
		return 0, &Error{Code: ResultTooBig, Msg: "changeset too big"}
	}
	p := sqlite3.Xsqlite3_malloc64(tls, uint64(len(b)+1))
	if p == 0 {
		return 0, errorFromCode(sqlite3.SQLITE_NOMEM)
	}
	copy(cmem(p, len(b)), b)
	return p, nil
}

// InvertChangeset returns the changeset that undoes cs
// (sqlite3changeset_invert): inserts become deletes, deletes inserts, and
// updates swap their old and new values.
func InvertChangeset(cs []byte) ([]byte, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	ensureInit()
	type result struct {
		b   []byte
		err error
	}
	r := withTLS(func(tls *libc.TLS) result {
		in, err := cbuffer(tls, cs)
		if err != nil {
			return result{err: err}
		}
		defer sqlite3.Xsqlite3_free(tls, in)
		out := tls.Alloc(16)
		defer tls.Free(16)
		storeInt32(out, 0)
		storePtr(out+8, 0)
		if rc := sqlite3.Xsqlite3changeset_invert(tls, int32(len(cs)), in, out, out+8); rc != sqlite3.SQLITE_OK {
			return result{err: errorFromCode(rc)}
		}
		return result{b: takeBuffer(tls, loadPtr(out+8), int(loadInt32(out)))}
	})
	return r.b, r.err
}

// Change operations, as a changeset records them.
const (
	OpInsert = sqlite3.SQLITE_INSERT
	OpUpdate = sqlite3.SQLITE_UPDATE
	OpDelete = sqlite3.SQLITE_DELETE
)

// Value is one value of a change: its storage class (TypeInteger ...
// TypeNull) and the value. Text and BLOBs are in Bytes. A Value of an
// UPDATE's column that did not change has Set false.
type Value struct {
	Type  int
	Int   int64
	Float float64
	Bytes []byte
	Set   bool
}

// Change is one row of a changeset: its table, operation, which columns
// form the key, and the old and new values (Old for updates and deletes,
// New for updates and inserts; nil otherwise). Conflict is the row as it is
// now, in a conflict of ApplyChangeset.
type Change struct {
	Table    string
	Op       int
	Indirect bool
	PK       []bool
	Old, New []Value
	Conflict []Value
}

// EachChange calls fn for every change in cs, in order.
func EachChange(cs []byte, fn func(Change) error) error {
	if len(cs) == 0 {
		return nil
	}
	ensureInit()
	return withTLS(func(tls *libc.TLS) error {
		in, err := cbuffer(tls, cs)
		if err != nil {
			return err
		}
		defer sqlite3.Xsqlite3_free(tls, in)
		pp := tls.Alloc(8)
		defer tls.Free(8)
		storePtr(pp, 0)
		if rc := sqlite3.Xsqlite3changeset_start(tls, pp, int32(len(cs)), in); rc != sqlite3.SQLITE_OK {
			return errorFromCode(rc)
		}
		it := loadPtr(pp)
		var ferr error
		for ferr == nil {
			rc := sqlite3.Xsqlite3changeset_next(tls, it)
			if rc != sqlite3.SQLITE_ROW {
				if rc != sqlite3.SQLITE_DONE {
					ferr = errorFromCode(rc)
				}
				break
			}
			ch, err := readChange(tls, it, false)
			if err != nil {
				ferr = err
				break
			}
			ferr = fn(ch)
		}
		if rc := sqlite3.Xsqlite3changeset_finalize(tls, it); rc != sqlite3.SQLITE_OK && ferr == nil {
			ferr = errorFromCode(rc)
		}
		return ferr
	})
}

// readChange reads the change the iterator it points at; conflict adds
// the conflicting row (only inside a conflict handler).
func readChange(tls *libc.TLS, it uintptr, conflict bool) (Change, error) {
	out := tls.Alloc(32)
	defer tls.Free(32)
	for i := 0; i < 32; i += 8 {
		storePtr(out+uintptr(i), 0)
	}
	// zTab, nCol, op, indirect
	if rc := sqlite3.Xsqlite3changeset_op(tls, it, out, out+8, out+16, out+24); rc != sqlite3.SQLITE_OK {
		return Change{}, errorFromCode(rc)
	}
	ch := Change{
		Table:    libc.GoString(loadPtr(out)),
		Op:       int(loadInt32(out + 16)),
		Indirect: loadInt32(out+24) != 0,
	}
	n := int(loadInt32(out + 8))
	storePtr(out, 0)
	if rc := sqlite3.Xsqlite3changeset_pk(tls, it, out, out+8); rc != sqlite3.SQLITE_OK {
		return Change{}, errorFromCode(rc)
	}
	ch.PK = make([]bool, n)
	if pk := loadPtr(out); pk != 0 {
		for i, b := range cmem(pk, n) {
			ch.PK[i] = b != 0
		}
	}
	read := func(get func(*libc.TLS, uintptr, int32, uintptr) int32) ([]Value, error) {
		vals := make([]Value, n)
		for i := range vals {
			storePtr(out, 0)
			if rc := get(tls, it, int32(i), out); rc != sqlite3.SQLITE_OK {
				return nil, errorFromCode(rc)
			}
			vals[i] = readValue(tls, loadPtr(out))
		}
		return vals, nil
	}
	var err error
	if ch.Op != OpInsert {
		if ch.Old, err = read(sqlite3.Xsqlite3changeset_old); err != nil {
			return ch, err
		}
	}
	if ch.Op != OpDelete {
		if ch.New, err = read(sqlite3.Xsqlite3changeset_new); err != nil {
			return ch, err
		}
	}
	if conflict {
		ch.Conflict, err = read(func(tls *libc.TLS, it uintptr, i int32, pp uintptr) int32 {
			return sqlite3.Xsqlite3changeset_conflict(tls, it, i, pp)
		})
	}
	return ch, err
}

// readValue copies a sqlite3_value; a NULL pointer (a column an UPDATE
// left alone) reads as a Value with Set false.
func readValue(tls *libc.TLS, v uintptr) Value {
	if v == 0 {
		return Value{Type: TypeNull}
	}
	out := Value{Type: int(sqlite3.Xsqlite3_value_type(tls, v)), Set: true}
	switch out.Type {
	case TypeInteger:
		out.Int = sqlite3.Xsqlite3_value_int64(tls, v)
	case TypeFloat:
		out.Float = sqlite3.Xsqlite3_value_double(tls, v)
	case TypeText:
		p := sqlite3.Xsqlite3_value_text(tls, v)
		out.Bytes = append([]byte{}, cmem(p, int(sqlite3.Xsqlite3_value_bytes(tls, v)))...)
	case TypeBlob:
		p := sqlite3.Xsqlite3_value_blob(tls, v)
		out.Bytes = append([]byte{}, cmem(p, int(sqlite3.Xsqlite3_value_bytes(tls, v)))...)
	}
	return out
}

// Conflict kinds passed to an ApplyChangeset handler
// (SQLITE_CHANGESET_DATA ...).
const (
	// ConflictData: the row to update or delete is there, but its values
	// are not the ones the change expects.
	ConflictData = sqlite3.SQLITE_CHANGESET_DATA
	// ConflictNotFound: the row to update or delete is not there.
	ConflictNotFound = sqlite3.SQLITE_CHANGESET_NOTFOUND
	// ConflictConflict: a row with the key to insert is there already.
	ConflictConflict = sqlite3.SQLITE_CHANGESET_CONFLICT
	// ConflictConstraint: the change would break a constraint.
	ConflictConstraint = sqlite3.SQLITE_CHANGESET_CONSTRAINT
	// ConflictForeignKey: the changeset as a whole breaks foreign keys.
	ConflictForeignKey = sqlite3.SQLITE_CHANGESET_FOREIGN_KEY
)

// Answers of an ApplyChangeset conflict handler.
const (
	ConflictOmit    = sqlite3.SQLITE_CHANGESET_OMIT    // skip this change
	ConflictReplace = sqlite3.SQLITE_CHANGESET_REPLACE // overwrite the row (DATA and CONFLICT only)
	ConflictAbort   = sqlite3.SQLITE_CHANGESET_ABORT   // stop and roll the apply back
)

// ConflictFunc decides a conflict of ApplyChangeset: kind is a Conflict*
// constant, ch the change (with the row as it is now in ch.Conflict for
// ConflictData and ConflictConflict). It returns ConflictOmit,
// ConflictReplace or ConflictAbort; a panic aborts.
type ConflictFunc func(kind int, ch Change) int

var conflictHandlers = struct {
	sync.Mutex
	next uintptr
	m    map[uintptr]*applyState
}{m: map[uintptr]*applyState{}}

type applyState struct {
	fn  ConflictFunc
	err error
}

// ApplyChangeset applies cs to c's main database
// (sqlite3changeset_apply_v2, inside a savepoint of its own), asking
// conflict about every conflict. Tables of cs that c lacks, or whose
// columns or key differ, are skipped by SQLite: check them first.
func (c *Conn) ApplyChangeset(cs []byte, conflict ConflictFunc) error {
	if !c.usable() {
		return errClosed
	}
	if len(cs) == 0 {
		return nil
	}
	in, err := cbuffer(c.tls, cs)
	if err != nil {
		return err
	}
	defer sqlite3.Xsqlite3_free(c.tls, in)
	st := &applyState{fn: conflict}
	conflictHandlers.Lock()
	conflictHandlers.next++
	id := conflictHandlers.next
	conflictHandlers.m[id] = st
	conflictHandlers.Unlock()
	defer func() {
		conflictHandlers.Lock()
		delete(conflictHandlers.m, id)
		conflictHandlers.Unlock()
	}()
	rc := sqlite3.Xsqlite3changeset_apply_v2(c.tls, c.db, int32(len(cs)), in, 0, funcAddr(conflictTrampoline), id, 0, 0, 0)
	if st.err != nil {
		return st.err
	}
	if rc != sqlite3.SQLITE_OK {
		return c.errorFor(rc)
	}
	return nil
}

// conflictTrampoline is the conflict handler's C callback.
func conflictTrampoline(tls *libc.TLS, id uintptr, kind int32, it uintptr) (rc int32) {
	conflictHandlers.Lock()
	st := conflictHandlers.m[id]
	conflictHandlers.Unlock()
	if st == nil || st.fn == nil {
		return sqlite3.SQLITE_CHANGESET_ABORT
	}
	defer func() {
		if recover() != nil {
			rc = sqlite3.SQLITE_CHANGESET_ABORT
		}
	}()
	withRow := kind == sqlite3.SQLITE_CHANGESET_DATA || kind == sqlite3.SQLITE_CHANGESET_CONFLICT
	var ch Change
	if kind != sqlite3.SQLITE_CHANGESET_FOREIGN_KEY {
		var err error
		if ch, err = readChange(tls, it, withRow); err != nil {
			st.err = err
			return sqlite3.SQLITE_CHANGESET_ABORT
		}
	}
	switch r := st.fn(int(kind), ch); r {
	case ConflictOmit, ConflictAbort:
		return int32(r)
	case ConflictReplace:
		if withRow {
			return int32(r)
		}
	}
	return sqlite3.SQLITE_CHANGESET_ABORT
}

// storeInt32 writes a C int at p.
func storeInt32(p uintptr, v int32) { binary.NativeEndian.PutUint32(cmem(p, 4), uint32(v)) }
