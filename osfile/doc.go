// Package osfile holds what the project asks of the OS about files beyond
// reading and writing them: durable folder changes and advisory locks.
//
// Folder changes: a rename into a folder, and folders just created,
// survive a power loss only once the folder holding the new name has been
// synced (fsync of the directory on Unix; NTFS journals names itself):
// [MkdirAll] and [SyncDir].
//
// Locks: OS advisory locks on whole files, taken without waiting: a shared
// lock that every server holds on its database, and exclusive ones for
// restore, for cleaning what a crash left, and for the one server that
// runs Litestream ([LockShared], [LockExclusive], [DowngradeLock]). The
// locks are flock on Unix and LockFileEx on Windows, so they never
// interfere with SQLite's own locking.
//
// A server's lock lives on a descriptor of the database file itself, and on
// Unix closing any descriptor of a file drops every POSIX lock (SQLite's)
// the process holds on it: that descriptor must be opened before the
// process's first SQLite connection and closed after its last (DESIGN.md).
//
// It imports nothing of the project (the worker links it, and so do
// the front's server, restore, replicate and memory).
package osfile
