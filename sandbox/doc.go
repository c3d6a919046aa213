// Package sandbox confines a worker process to its database before it runs
// any SQL: on Linux with no_new_privs, Landlock (files and, where the
// kernel offers it, TCP) and a seccomp system call allowlist, elsewhere
// not at all, with a report that says so.
//
// # Allowance
//
// An [Allowance] names what a confined worker may touch: the database file
// (read-write, or read-only in the readonly profile), its -wal, -shm and
// -journal files, and the snapshot folder. The front encodes it into the
// worker's environment ([Allowance.Env], part of ipc.WorkerEnv), so that a
// standby worker confines itself before its request arrives; the worker's
// main decodes it ([DecodeAllowance]) and [Enter] applies it.
//
// # Threads
//
// Landlock and no_new_privs hold per OS thread, and the Go runtime has
// several threads before main runs. [Apply] restricts every thread with
// syscall.AllThreadsSyscall where the binary has no cgo. Where it has (the
// default build links cgo through package net), it restricts the current
// thread and re-executes the binary from it: the new image inherits the
// restriction on all of its threads. The re-executed process finds a marker
// in its environment and [Enter] returns at once. [StartConfined] spares the
// re-execution: the front restricts a thread of its own and starts the
// worker from it, so the worker is confined from its first instruction.
//
// # System calls
//
// [RestrictSyscalls] installs the worker's seccomp-bpf allowlist on every
// thread, the last step before a worker reads its request: no socket of
// any family, threads but no new process, and execve or ptrace end the
// process. The table is seccomp_table_linux.go; an architecture without
// one refuses to run confined, a kernel without seccomp runs on without
// it ([ErrNoSeccomp]). A build with the seccomplog tag logs misses to the
// kernel log instead of refusing them, to find the table's gaps.
//
// See DESIGN.md.
//
// Imports: osfile only. Never ipc (which imports it to start workers
// confined), worker or server.
package sandbox
