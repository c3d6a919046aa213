package server

import (
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server/mcpstdio"
)

// noResponse ends a call that must get no response: one the client
// cancelled or shutdown stopped (MCP). Over stdio the response is dropped;
// in-process clients (the call command) see this result, with its text.
func noResponse(stdio *mcpstdio.Call, reason string) *mcp.CallToolResult {
	stdio.DropResponse()
	return mcp.NewToolResultError("CANCELLED: " + reason)
}
