// Package cli is the command line of mcp-sqlite-memory: serving MCP over
// stdio, the worker mode, and the demo, sample-db, call, verify and restore
// subcommands. The mains in cmd/ only call Run.
//
// Imports: everything a command needs (config, server, worker for the
// worker mode, restore, ui, eval, replicate, tokens, memory, sampledb,
// version). Nothing of the project imports cli but the mains in cmd/; flag
// parsing it shares with server lives in config, so neither reaches into
// the other.
package cli
