package server

import "github.com/mcp-sqlite-memory/mcp-sqlite-memory/version"

// Version is this build's version, as --version prints it and MCP hosts
// see it in serverInfo (package version says where it comes from).
func Version() string { return version.Get().Version }
