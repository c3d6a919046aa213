package rawsqlite

import (
	"strings"

	"modernc.org/libc"
	sqlite3 "modernc.org/sqlite/lib"
)

// OverloadInnocuous declares the SQL function name with nArg arguments (-1:
// any number) as a placeholder for virtual tables to overload, like
// sqlite3_overload_function, but flagged SQLITE_INNOCUOUS. Called on its
// own, the placeholder fails with "unable to use function NAME in the
// requested context"; with a virtual-table column as its first argument,
// the table's xFindFunction supplies the implementation, which inherits the
// flag.
//
// With trusted_schema=OFF, SQLite lets views and triggers call only
// innocuous functions, and sqlite3_overload_function's placeholders are not
// flagged: FTS5's MATCH, bm25(), highlight() and snippet() then fail inside
// a view ("unsafe use of MATCH()"). Declare a name innocuous only when every
// implementation a module can supply for it is free of side effects. An
// existing function of that name and arity is replaced, which fails while
// statements run on c.
func (c *Conn) OverloadInnocuous(name string, nArg int) error {
	if !c.usable() {
		return errClosed
	}
	if name == "" || strings.IndexByte(name, 0) >= 0 {
		return &Error{Code: ResultMisuse, Msg: "rawsqlite: bad function name"}
	}
	// The name is also the placeholder's user data, for its error message;
	// SQLite frees it with the function.
	zName := sqlite3.Xsqlite3_malloc(c.tls, int32(len(name)+1))
	if zName == 0 {
		return errorFromCode(sqlite3.SQLITE_NOMEM)
	}
	cstring(zName, name)
	rc := sqlite3.Xsqlite3_create_function_v2(c.tls, c.db, zName, int32(nArg),
		sqlite3.SQLITE_UTF8|sqlite3.SQLITE_INNOCUOUS, zName,
		funcAddr(placeholderFunc), 0, 0, funcAddr(sqlite3.Xsqlite3_free))
	if rc != sqlite3.SQLITE_OK {
		// create_function_v2 calls xDestroy on failure itself.
		return c.errorFor(rc)
	}
	return nil
}

// placeholderFunc is the body of an OverloadInnocuous placeholder, worded
// like SQLite's own.
func placeholderFunc(tls *libc.TLS, ctx uintptr, _ int32, _ uintptr) {
	name := libc.GoString(sqlite3.Xsqlite3_user_data(tls, ctx))
	msg := "unable to use function " + name + " in the requested context"
	z := tls.Alloc(len(msg) + 1)
	defer tls.Free(len(msg) + 1)
	cstring(z, msg)
	sqlite3.Xsqlite3_result_error(tls, ctx, z, -1)
}
