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
// # What lives elsewhere
//
// The audit queue that writes query_log (package audit) and export and
// import (package portable) import this package, never the reverse:
// [Store.Share] lends the store's connections and write mutex to the
// queue, [OpenQueryLog] makes the read-only profile's audit file, and
// [Build] and [ChainCheck] are the database and chain sides of an import.
// The schema of all three tables, query_log included, stays here.
//
// Imports: rawsqlite, policy (the one list of the server's objects) and
// render (the one JSON string escape). Never worker, ipc,
// server or mcp-go: the worker must not link it.
package memory
