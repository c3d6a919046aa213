// Package server is the front process: given the configuration (parsed
// by config, for cli), it offers the MCP tools of the chosen profile over
// stdio or Streamable HTTP, hands every agent statement to a worker
// process, runs the memory tools on its own connection, and writes an
// audit row for every call.
//
// Each tool is declared once, in a table (tools.go, readonly.go): its
// title, hints, description and arguments (params.go). The input schema
// tools/list shows and the handler's argument checks are both made from
// that declaration; the scope a tool needs over HTTP is in server/scopes.
// The HTTP front door is one chain of server/httpguard checks (http.go).
//
// Imports: config, ipc (workers are other processes, reached only through
// it), memory and audit, snapshot (file names), server/mcpstdio,
// server/httpguard, server/tokens, server/scopes, server/oauth, render,
// replicate, sandbox, osfile, errcode, version and mcp-go. Never worker,
// policy, rawsqlite or cli.
package server
