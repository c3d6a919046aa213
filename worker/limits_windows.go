package worker

import (
	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// applyOSLimits does nothing on Windows: the front puts every worker in a
// Job Object with the memory limit before it sends the request.
func applyOSLimits(*ipc.Request, hclog.Logger) error { return nil }
