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
//	conn.SetAuthorizer(func(r rawsqlite.AuthRequest) int { // the worker's binding
//		return a.Authorize(policy.Call{Action: r.Action, Arg1: r.Arg1, Arg2: r.Arg2,
//			DB: r.DB, Trigger: r.Trigger, Arg2Null: r.Arg2Null, Nested: r.Nested})
//	})
//	st, tail, err := conn.Prepare(query) // on "not authorized", report a.Violation()
//	sum := a.Summary()                   // read it before the first step
//	// write mode: CheckFTSCommands over the program of st (EXPLAIN)
//	row, err := st.Step()                // a refusal can also happen here (VACUUM)
//
// The binding must tell a NULL PRAGMA value from an empty one (Arg2Null)
// and a virtual table's own statements from the agent's (Nested); modernc's
// database/sql driver can do neither.
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
//   - sqlite3_limit(SQLITE_LIMIT_ATTACHED, 0): ATTACH fails,
//     and so do VACUUM and VACUUM INTO, which attach internally.
//   - No extension loading: modernc.org/sqlite never enables it; the worker
//     must not either.
//   - PRAGMA query_only=1 for [Select] and [Read]; the read-only profile also
//     opens the file read-only.
//
// The worker sets them on its connection (worker/conn.go).
//
// # What the authorizer cannot see
//
// See DESIGN.md: VACUUM is only visible when it runs; FTS commands are
// values, seen only in the compiled program; CREATE TRIGGER and CREATE VIEW
// bodies are checked when they are used, not when they are created;
// REPLACE's implicit deletes are not reported.
//
// Imports: errcode and rawsqlite (SQLite's identifier folding) only. Never
// worker, memory, ipc or server. It holds the one list of the server's
// objects (TableEvents ... IndexCheckpoints), which memory creates and
// everything else asks about through IsProtected and IsServerObject.
package policy
