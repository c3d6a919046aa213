// Package restore puts a snapshot back into a memory database (SPEC 9,
// 5.3): the agent's tables, indexes, views and triggers come back from the
// snapshot, the server's objects (the memory chain, checkpoints, audit log
// and whatever else the policy and memory packages call the server's) stay
// as they are, so the chain only ever grows. Everything happens through
// SQLite, in one transaction on a connection to the database, so other
// connections see the old state or the new one and never a mix; the
// restore records itself in the chain (kind "restore") and in the audit
// log in that same transaction.
//
// Before it changes anything it writes a safety snapshot of the current
// state (<stem>.<stamp>Z.pre-restore.db, a full copy through the online
// backup API that retention counts like any other) and prints what it will
// change. Applying an undo record keeps an undo record of the apply
// instead, which costs what the apply changes (a full copy only when the
// record recreates objects). With Everything it copies the whole snapshot over the database
// through the backup API instead, and says which memory rows that
// discards.
//
// The process holds the database's lock descriptor (the advisory lock
// every server holds shared) from before its first SQLite connection to
// after its last: on Unix, closing any descriptor of the file would drop
// the POSIX locks SQLite holds through its own.
//
// Imports: snapshot (names, full copies, undo records and their apply,
// which server objects are the server's), memory, rawsqlite and osfile.
// Never worker or policy (snapshot holds what it needs of both), server or
// ipc.
package restore
