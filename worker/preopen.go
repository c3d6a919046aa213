package worker

import (
	"os"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// EnvPreopen names the database a worker opens while it waits for its
// request ("ro:" in front for a read-only open). The front sets it, so a
// standby worker has its connection open, its backstops set and the schema
// read before the call arrives.
const EnvPreopen = "MCP_SQLITE_WORKER_PREOPEN"

// PreopenValue is EnvPreopen's value for db.
func PreopenValue(db string, readOnly bool) string {
	if readOnly {
		return "ro:" + db
	}
	return db
}

// preopened is the connection opened ahead, if any.
var preopened struct {
	path     string
	readOnly bool
	conn     *rawsqlite.Conn
}

// preopen opens the database named by EnvPreopen. Nothing of the agent's
// runs here; failures only cost the head start, and the request's own open
// reports them.
func preopen(log hclog.Logger) {
	v := os.Getenv(EnvPreopen)
	if v == "" {
		return
	}
	path, readOnly := strings.CutPrefix(v, "ro:")
	c, err := openConn(path, readOnly)
	if err != nil {
		log.Debug("no connection opened ahead", "error", err)
		return
	}
	// Reading the schema now spares the request's first prepare that work.
	if err := c.Exec("SELECT count(*) FROM sqlite_schema"); err != nil {
		log.Debug("no connection opened ahead", "error", err)
		c.Close()
		return
	}
	preopened.path, preopened.readOnly, preopened.conn = path, readOnly, c
}

// takePreopened hands over the connection opened ahead when it is the one
// req needs, and closes it otherwise.
func takePreopened(req *ipc.Request) *rawsqlite.Conn {
	c := preopened.conn
	if c == nil {
		return nil
	}
	preopened.conn = nil
	if preopened.readOnly == req.ReadOnlyFile && sandbox.SamePath(preopened.path, req.DB) {
		return c
	}
	c.Close()
	return nil
}
