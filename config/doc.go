// Package config reads the server's settings (SPEC 8) from flags and the
// environment: [Parse] and the [Config] it fills, the --http settings
// ([HTTPConfig]), the usage text, and the checks and hints about a
// database path that the command line prints ([DBPathProblem],
// [PathWarning], [Closest] for a mistyped name).
//
// Both the command line (package cli) and the server read it, so neither
// reaches into the other for flags. It imports ipc only (the worker
// limits' bounds); never server, cli or memory.
package config
