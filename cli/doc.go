// Package cli is the command line of mcp-sqlite-memory: serving MCP over
// stdio, the worker mode, and the demo, sample-db, call, verify and restore
// subcommands. The mains in cmd/ only call Run.
package cli
