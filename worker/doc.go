// Package worker executes one request in its own short-lived process: it
// limits itself, opens the database, installs the authorizer policy,
// compiles and checks the agent's single statement, runs it and renders the
// result. Whatever the statement does, only this process suffers.
//
// Imports: ipc (it is the Executor behind ipc.Serve), policy, snapshot,
// rawsqlite, render, worker/search, sandbox, osfile, errcode and version.
// Never memory, server, replicate, cli or mcp-go:
// cmd/mcp-sqlite-memory-worker/deps_test.go keeps the line.
package worker
