// Package contain ties the server's child processes to its life on
// Windows. A worker there is created suspended and put in a Job Object of
// its own right after (package ipc); a server killed in between used to
// leave that worker suspended for ever, holding its pipes. Children puts
// the server itself in a kill-on-close Job Object first, so every child
// is born inside it and dies with the server, however the server ends.
// The one child that must outlive the server, the Litestream guard (whose
// work is the final sync after the server is gone), breaks away with
// BreakawayFlag.
//
// Elsewhere it does nothing: a Linux worker has Pdeathsig from its first
// instruction (package sandbox), and the guard notices its stdin end.
package contain
