package rawsqlite

import (
	"sync"
	"unsafe"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// AuthRequest is one call of SQLite's authorizer: Action (an Auth*
// constant) on Arg1/Arg2 in database DB, from inside trigger or view
// Trigger ("" at top level). NULL arguments arrive as "".
type AuthRequest struct {
	Action      int
	Arg1, Arg2  string
	DB, Trigger string
	// Arg2Null tells a NULL Arg2 from an empty string. It matters for
	// SQLITE_PRAGMA: PRAGMA x reports NULL, PRAGMA x = '' reports "".
	Arg2Null bool
	// Nested is true when the action belongs to a statement prepared while
	// another statement was compiling: a virtual-table module connecting
	// (xConnect) prepares its own statements that way. See
	// [Conn.NestedPrepare].
	Nested bool
}

// AuthorizerFunc decides, while a statement compiles, whether it may
// perform the requested action. It returns AuthOK, AuthDeny or AuthIgnore;
// anything else, and a panic, counts as AuthDeny.
//
// The function runs on the goroutine calling Prepare or Step (SQLite
// re-prepares expired statements inside Step, and virtual tables prepare
// their own while a statement steps) and must not use the Conn.
type AuthorizerFunc func(r AuthRequest) int

// authorizers maps a db handle to its Go callback: the C side can only
// carry the handle (pArg) back to us.
var authorizers = struct {
	sync.RWMutex
	m map[uintptr]AuthorizerFunc
}{m: map[uintptr]AuthorizerFunc{}}

// SetAuthorizer installs fn as the connection's authorizer, replacing any
// earlier one; nil removes it. Installing or removing one expires the
// connection's prepared statements, so SQLite re-prepares (and
// re-authorizes) them on their next Step.
func (c *Conn) SetAuthorizer(fn AuthorizerFunc) error {
	if !c.usable() {
		return errClosed
	}
	if fn == nil {
		rc := sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, 0, 0)
		unregisterAuthorizer(c.db)
		if rc != sqlite3.SQLITE_OK {
			return c.errorFor(rc)
		}
		return nil
	}
	authorizers.Lock()
	authorizers.m[c.db] = fn
	authorizers.Unlock()
	if rc := sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, funcAddr(authTrampoline), c.db); rc != sqlite3.SQLITE_OK {
		unregisterAuthorizer(c.db)
		return c.errorFor(rc)
	}
	return nil
}

func unregisterAuthorizer(db uintptr) {
	authorizers.Lock()
	delete(authorizers.m, db)
	authorizers.Unlock()
}

// authTrampoline is the C authorizer callback. It fails closed: no
// registered function, a panic or an unknown answer all deny.
func authTrampoline(_ *libc.TLS, db uintptr, action int32, z1, z2, zDB, zTrigger uintptr) (rc int32) {
	authorizers.RLock()
	fn := authorizers.m[db]
	authorizers.RUnlock()
	if fn == nil {
		return sqlite3.SQLITE_DENY
	}
	defer func() {
		if recover() != nil {
			rc = sqlite3.SQLITE_DENY
		}
	}()
	r := AuthRequest{
		Action: int(action),
		Arg1:   libc.GoString(z1), Arg2: libc.GoString(z2),
		DB: libc.GoString(zDB), Trigger: libc.GoString(zTrigger),
		Arg2Null: z2 == 0,
		Nested:   nestedPrepare(db),
	}
	switch r := fn(r); r {
	case AuthOK, AuthIgnore:
		return int32(r)
	default:
		return sqlite3.SQLITE_DENY
	}
}

// Field offsets inside SQLite's own structs, taken from the transpiled
// types of the linked SQLite: they are right for every target, and a
// SQLite without these fields fails to build rather than misread memory.
const (
	offDBParse    = unsafe.Offsetof((*sqlite3.Tsqlite3)(nil).FpParse)
	offOuterParse = unsafe.Offsetof((*sqlite3.TParse)(nil).FpOuterParse)
	offToplevel   = unsafe.Offsetof((*sqlite3.TParse)(nil).FpToplevel)
)

// NestedPrepare reports whether the statement now compiling on c was
// prepared while another statement was compiling. The authorizer receives
// it as [AuthRequest.Nested]; it is exported for tests and diagnostics.
//
//   - false: the statement compiled by Prepare, together with the trigger
//     bodies and foreign-key actions SQLite compiles into it; or a statement
//     compiled while another one steps (SQLite re-preparing an expired
//     statement; a virtual table's xFilter, xUpdate or integrity check
//     preparing its own).
//   - true: a statement that a virtual-table module prepares while
//     connecting (xConnect), because a statement being compiled names its
//     table. R*Tree prepares the INSERT and DELETE statements on its shadow
//     tables that way, also when the statement naming it is a SELECT.
//
// SQLite keeps a chain of parser contexts: each compilation points to the
// one it interrupted (pOuterParse), and the context of a trigger body also
// points to the statement it belongs to (pToplevel).
func (c *Conn) NestedPrepare() bool {
	if !c.usable() {
		return false
	}
	return nestedPrepare(c.db)
}

func nestedPrepare(db uintptr) bool {
	p := loadPtr(db + offDBParse)
	if p == 0 {
		return false
	}
	if top := loadPtr(p + offToplevel); top != 0 {
		p = top // a trigger body or foreign-key action belongs to its statement
	}
	return loadPtr(p+offOuterParse) != 0
}

// ExpireStatements makes SQLite compile every statement prepared on c
// again before its next step (with the authorizer, if any, asked again).
// SQLite decides some things when it compiles that hooks installed later
// change: a DELETE without WHERE compiled while no session recorded
// clears the table without reporting its rows.
func (c *Conn) ExpireStatements() error {
	if !c.usable() {
		return errClosed
	}
	authorizers.RLock()
	fn := authorizers.m[c.db]
	authorizers.RUnlock()
	// Installing an authorizer expires the statements; SQLite offers no
	// other way.
	if fn != nil {
		return c.check(sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, funcAddr(authTrampoline), c.db))
	}
	if err := c.check(sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, funcAddr(allowAll), 0)); err != nil {
		return err
	}
	return c.check(sqlite3.Xsqlite3_set_authorizer(c.tls, c.db, 0, 0))
}

func allowAll(*libc.TLS, uintptr, int32, uintptr, uintptr, uintptr, uintptr) int32 {
	return sqlite3.SQLITE_OK
}

func (c *Conn) check(rc int32) error {
	if rc == sqlite3.SQLITE_OK {
		return nil
	}
	return c.errorFor(rc)
}
