// Package ipc is the boundary between the front process and its workers: the
// versioned request and response types, their size-limited framing (a
// response carries an errcode code across the boundary), and the spawning,
// limiting and killing of worker processes (one request per process).
//
// # Protocol
//
// The front starts a worker, writes one JSON [Request] to its stdin and
// closes it; the worker writes any number of [Progress] frames, then one
// [Response] to stdout, and exits. A worker started ahead as a standby
// first writes [ReadyByte] when the front asks for it ([EnvReady]); see
// DESIGN.md. Logs go to stderr as hclog JSON lines, which the front
// re-logs under "worker". Both sides check [Version]; a worker refuses a
// request of any other version with a frame that carries the versions it
// speaks ([Response] Speaks), which [CheckWorker] reads. A
// [PrewakeByte] may come before the request: [Spawner.Prewake]'s nudge,
// on which the standby warms up again ([Executor] Rewarm). A request may
// ask the worker to stamp its steps ([WorkerStamps]) for the front's
// [CallTrace].
//
// # Failures
//
// A worker's own failure comes back as a failed [Response] with its code.
// A request its worker did not answer (killed at its timeout or on
// cancellation, out of memory, exited without an answer, garbage, no
// worker to run it) is a [*RunError]: the reason, the phase and the budget
// that ran out, with the errcode code of the reason. The package says what
// happened; the server words it for the agent (flag names included).
// Out of memory is a code too: a worker whose SQLite memory neared its
// limit writes the memory alert ([PhaseMemoryHigh]) first, and one that
// dies without an answer after it is [RunOutOfMemory]; what it printed
// on stderr is logged, never read.
//
// # Process handling
//
// Platform specifics (process groups and Pdeathsig on Linux, Job Objects on
// Windows) live in process_*.go behind three functions: prepare a command,
// attach limits after start, and kill the worker with everything it started.
//
// Imports: errcode and sandbox only. Never worker, policy, memory, server,
// rawsqlite or mcp-go: both the server and the lean worker link it. It
// holds both ends of the worker protocol (go-plugin's layout): the host
// side (Spawner, the standby pool, a process and its slot) and the child
// side (Serve, with the Executor that package worker implements).
package ipc
