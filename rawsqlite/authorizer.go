package rawsqlite

import (
	"sync"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// AuthorizerFunc decides, while a statement compiles, whether it may
// perform action (an Auth* constant) on arg1/arg2 in database dbName, from
// inside trigger or view trigger ("" at top level). It returns AuthOK,
// AuthDeny or AuthIgnore; anything else, and a panic, counts as AuthDeny.
// NULL arguments arrive as "".
//
// The function runs on the goroutine calling Prepare or Step (SQLite
// re-prepares expired statements inside Step) and must not use the Conn.
type AuthorizerFunc func(action int, arg1, arg2, dbName, trigger string) int

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
	switch r := fn(int(action), libc.GoString(z1), libc.GoString(z2), libc.GoString(zDB), libc.GoString(zTrigger)); r {
	case AuthOK, AuthIgnore:
		return int32(r)
	default:
		return sqlite3.SQLITE_DENY
	}
}
