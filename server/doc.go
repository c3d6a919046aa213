// Package server is the front process: it parses the configuration, offers
// the MCP tools of the chosen profile, hands every agent statement to a
// worker process, runs the memory tools on its own connection, and writes an
// audit row for every call.
package server
