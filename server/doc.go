// Package server is the front process: it parses the configuration, offers
// the MCP tools of the chosen profile, hands every agent statement to a
// worker process, runs the memory tools on its own connection, and writes an
// audit row for every call.
//
// Each tool is declared once, in a table (tools.go, readonly.go): its
// title, hints, description and arguments (params.go). The input schema
// tools/list shows and the handler's argument checks are both made from
// that declaration.
//
// Imports: config, ipc (workers are other processes, reached only through
// it), memory, snapshot (file names), server/mcpstdio, render, replicate,
// sandbox, tokens, osfile, errcode, version and mcp-go. Never worker,
// policy, rawsqlite or cli.
package server
