// Package rawsqlite is a thin binding over the transpiled C SQLite of
// modernc.org/sqlite/lib, for the worker process that runs one untrusted
// agent statement.
//
// database/sql cannot give the worker what it needs: the prepare tail (to
// enforce one statement per call), an authorizer, limits, interrupts, the
// storage class of every value, defensive mode, the hard heap limit and the
// online backup API. This package exposes exactly those and nothing else.
//
// A typical worker run:
//
//	rawsqlite.SetHardHeapLimit(200 << 20)
//	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite)
//	...
//	defer c.Close()
//	c.DBConfig(rawsqlite.ConfigDefensive, true)
//	c.Limit(rawsqlite.LimitAttached, 0)
//	c.SetAuthorizer(policyFunc)
//	st, tail, err := c.Prepare(agentSQL)
//	if err == nil && !rawsqlite.IsBlank(tail) { /* MULTIPLE_STATEMENTS */ }
//	for { row, err := st.Step(); ... }
//	st.Finalize()
//
// # Concurrency
//
// A Conn and its statements belong to one goroutine at a time: each Conn owns
// one libc.TLS, which is not safe for concurrent use, and connections are
// opened with SQLITE_OPEN_NOMUTEX (no per-connection mutex to pay for, since
// nothing else may use them concurrently anyway). The exceptions are
// [Conn.Interrupt] and [Conn.IsInterrupted], which any goroutine may call at
// any time, also while a Step runs or after Close.
//
// # Errors
//
// Failures from SQLite are *[Error] values carrying the extended result code
// and sqlite3_errmsg text verbatim ("no such table: nope", "not authorized",
// "interrupted", "out of memory", "database or disk is full"), so callers
// can map [Error.Primary] to their own error codes. Extended result codes are
// always on.
//
// # Memory
//
// SQLite in modernc is built with SQLITE_DEFAULT_MEMSTATUS=0, and SQLite only
// enforces the heap limits when memory statistics are on. This package turns
// them on (SQLITE_CONFIG_MEMSTATUS) before it first initializes SQLite; if
// some other code in the process initialized SQLite first, that is no longer
// possible and [MemStatsEnabled] reports false: [SetHardHeapLimit] is then
// recorded but not enforced.
//
// Imports: nothing of the project. It also holds what SQL text needs of
// names, once: QuoteIdent, FoldName and SameName, the catalogue's one
// reader (SchemaQuery, Conn.Schema) and the one immediate write
// transaction (Conn.BeginImmediate), and the one way to read the rows of
// a trusted query (Conn.Each, Conn.QueryRow: prepared, bound, stepped and
// always finalized, the step's error returned).
package rawsqlite
