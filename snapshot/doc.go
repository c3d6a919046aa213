// Package snapshot holds everything about snapshots but the tool that asks
// for one (server/snapshots.go) and the command that restores one
// (restore): their file names in the snapshot folder (name.go), and undo
// records, the snapshots that cost what a statement changes rather than
// what the database holds (SPEC 5.6), with their apply.
//
// # Names
//
// A snapshot of <stem> is <stem>.<stamp>Z<tag>.db ([FileName], [Tags]),
// written under a partial name ([PartialSuffix]) and renamed when
// complete; [Leftovers] finds what a stopped one left.
//
// # Undo records
//
// An undo record is a SQLite file. It holds the inverted changeset of one
// statement (SQLite's session extension, every table attached, so rows
// changed by triggers and foreign-key actions are in it), a whole copy
// (definition and rows) of every table the statement drops or alters, and
// the definitions of the indexes, views and triggers it drops or changes.
// Opened with sqlite3 it shows what it holds:
//
//	sqlite> SELECT * FROM undo_info;     -- statement, reason, time, tables, rows
//	sqlite> SELECT * FROM undo_rows;     -- rows put back per table
//	sqlite> SELECT * FROM undo_schema;   -- objects dropped and recreated
//
// The worker records ([Begin], then [Recorder.Finish]) inside the write
// transaction the statement runs in; [Apply] puts the rows and objects back
// in one transaction and refuses, naming them, when rows it would put back
// were changed since.
//
// It imports rawsqlite, policy and osfile only: never ipc, worker, memory
// or server, so the worker, the server and restore can all use it.
package snapshot
