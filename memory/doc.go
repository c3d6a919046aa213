// Package memory is the front process's own access to the three server
// tables of a mcp-sqlite-memory database: the append-only, hash-chained
// memory_events log, the memory_checkpoints anchored to it, and the
// query_log audit table.
//
// It opens its own connections (database/sql with the modernc driver; the
// chain check reads through rawsqlite, see [Store.Verify]) and runs only
// statements it builds itself, always with bound parameters. It never runs
// agent SQL; that is the worker's job.
//
// # Interchangeability
//
// Files are interchangeable with the reference Python server (0.3): the
// bootstrap DDL is byte-identical to the reference's, so bootstrapping a
// reference file leaves its sqlite_master unchanged, and the canonical hash
// form (see [Canonical]) and result texts follow the reference exactly.
//
// # Concurrency
//
// Appends and checkpoints run in BEGIN IMMEDIATE transactions (read the
// head, insert, commit), so several processes on one file keep one unbroken
// chain; within one process they are also serialised by a mutex so that
// goroutines do not spin in SQLite's busy handler. Every connection has a
// busy timeout of [BusyTimeout].
//
// # Durability
//
// The database runs in WAL mode with synchronous=FULL: every commit syncs
// the WAL before it returns, so an append or checkpoint that has returned
// survives a power cut or a kernel crash (SPEC 5), not only a crash of the
// process. It costs one fsync per commit: about 1,000 appends/s on a 2-core
// machine instead of 10,000 or more with synchronous=NORMAL, far above what
// an agent writes (BenchmarkAppend measures both). Audit rows are written in
// batches, one transaction and so one sync per batch.
//
// # Audit
//
// Every tool call is written through an [Auditor]: the [Store] itself (the
// query_log table of the memory database), an [AuditDB] (a separate audit
// file, for the read-only profile, which must never write to its database),
// a logger ([NewLogAuditor]), or several of them ([MultiAuditor]).
//
// Store and AuditDB queue rows in call order and write them from one
// goroutine, several per transaction, when the write lock allows: a lock
// held by another process delays rows, never a call, and rows are retried
// until written; Close writes the queue (waiting up to [AuditFlushTimeout]).
// A crash loses only the rows still queued. [AuditEntry.Bound] caps what a
// row can hold, so a call cannot grow the log without bound.
//
// Imports: rawsqlite, policy (the one list of the server's objects),
// render (the one JSON string escape) and osfile. Never worker, ipc,
// server or mcp-go: the worker must not link it.
package memory
