package server

import (
	"context"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
)

// openRemote starts a front in cluster mode with no rqlite node beside it
// (--rqlite without --rqlite-data).
func (s *Server) openRemote(_ context.Context) error {
	return &config.UsageError{Msg: "serving without a local rqlite node is not supported yet: the workers read the SQLite file of the node beside this server\nTry: --rqlite " + strings.Join(s.cfg.RQLite, ",") + " --rqlite-data DIR (the data directory of that node); verify, export and import --rqlite need no node (mcp-sqlite-memory verify --help)"}
}
