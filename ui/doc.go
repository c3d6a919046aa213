// Package ui is the person's read-only view of a memory database (SPEC
// 12): web pages of the timeline (events and checkpoints, filters, ranked
// search over the memory's full-text index), the chain's state and its
// JSON Lines export, the audit log with a server-drawn chart, the snapshot
// folder with the restore command of each snapshot, and the agent's tables.
//
// It reads through its own SQLite connections, opened read-only with
// query_only on (memory.ReadOnlyDSN), and runs only statements it builds,
// with bound values: never the agent's SQL (a view is listed, not run).
// It never opens the database, its -wal or -shm by hand (SQLite's POSIX
// locks would drop).
//
// Everything the agent wrote is untrusted: pages are html/template, never
// a value marked safe; the Content-Security-Policy allows no script at all
// and styles from this server only (embedded, no inline style); frames
// are refused; only GET and HEAD are served; Host, Origin and
// Sec-Fetch-Site are checked on every request before the authentication
// ([Options.Authorized]; the standalone command's [Login] trades a
// one-time secret for a cookie).
//
// Imports: memory, snapshot (file names and undo records), policy,
// rawsqlite, errcode and server/httpguard (the HTTP checks, which import
// nothing of the project). Never server, worker or ipc: it reads the
// database over its own read-only connections.
package ui
