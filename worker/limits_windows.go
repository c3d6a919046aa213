package worker

import (
	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// The OS limits do nothing on Windows: the front puts every worker in a Job
// Object with the memory limit before the worker runs its first
// instruction. SQLite's heap limit still applies (applyMemoryLimit).

func applyProcessLimits(int, hclog.Logger) error { return nil }

func applyOSMemoryLimit(int, hclog.Logger) error { return nil }

func settleOSMemoryLimit(int, hclog.Logger) error { return nil }

func applyFileLimit(*ipc.Request, hclog.Logger) error { return nil }

// pastFileLimit: this platform sets no file-size limit.
func pastFileLimit(int) bool { return false }
