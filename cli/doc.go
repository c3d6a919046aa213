// Package cli is the command line of mcp-sqlite-memory. The mains in cmd/
// only call Run. With no subcommand it serves MCP over stdio (or, with
// --http, over Streamable HTTP with the person's view at /ui/); its
// subcommands are demo, sample-db, call, verify, restore, export, import,
// ui, eval (--scripted; a model's run is the separate
// mcp-sqlite-memory-eval command), token (add, list, scopes, revoke),
// version and help, and worker, the worker mode a server runs when no
// lean worker stands beside it.
//
// Imports: everything a command needs (config, server and its tokens,
// scopes and oauth, worker for the worker mode, ipc, restore, ui, eval
// and its harness and sampledb, replicate, memory, portable, version).
// Nothing of the project imports cli but the mains in cmd/; flag parsing
// it shares with server lives in config, so neither reaches into the
// other.
package cli
