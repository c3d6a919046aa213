// Package policy decides, through SQLite's authorizer, what one untrusted
// agent statement may do in each tool.
//
// A worker installs an [Authorizer] on its connection before it compiles the
// agent's statement. SQLite then reports every action of the compiled
// statement (tables read and written, functions, PRAGMAs, DDL, actions inside
// trigger bodies and views), so comments, CTEs, casing and quoting cannot
// disguise what the statement does. No keyword scanning is involved.
//
// # Use
//
//	a := policy.New(policy.Write, policy.Options{ShadowTables: shadow})
//	err := sqlConn.Raw(func(dc any) error {
//		return dc.(sqlite.AuthorizerRegisterer).RegisterAuthorizer(
//			func(ac sqlite.AuthorizerActionCode, a1, a2, db, trig string) sqlite.AuthorizerReturnCode {
//				return sqlite.AuthorizerReturnCode(a.Authorize(int(ac), a1, a2, db, trig))
//			})
//	})
//	stmt, err := sqlConn.PrepareContext(ctx, query) // on "not authorized", report a.Violation()
//	sum := a.Summary()                              // read it before the first step
//	rows, err := stmt.QueryContext(ctx)             // a refusal can also happen here (VACUUM)
//
// # Connection backstops
//
// The authorizer is the policy; these settings make a mistake in it harmless.
// The worker applies them on every connection before any agent SQL:
//
//   - SQLITE_DBCONFIG_DEFENSIVE on (DSN `_defensive=1`): no writable_schema,
//     no direct writes to FTS5/R*Tree shadow tables or sqlite_dbpage.
//   - PRAGMA trusted_schema=OFF: views and triggers may only call innocuous
//     functions.
//   - sqlite3_limit(SQLITE_LIMIT_ATTACHED, 0) ([LimitAttached]): ATTACH fails,
//     and so do VACUUM and VACUUM INTO, which attach internally.
//   - No extension loading: modernc.org/sqlite never enables it; the worker
//     must not either.
//   - PRAGMA query_only=1 for [Select] and [Read]; the read-only profile also
//     opens the file read-only.
//
// [DSNParams] returns the DSN query parameters for the first, second and
// last of these.
//
// # What the authorizer cannot see
//
// See DESIGN.md: VACUUM is only visible when it runs; the driver reports
// PRAGMA x with an empty value like PRAGMA x; a virtual table's own statements look like
// the agent's; CREATE TRIGGER and CREATE VIEW bodies are checked when they
// are used, not when they are created; REPLACE's implicit deletes are not
// reported.
package policy
