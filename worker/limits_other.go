//go:build !linux && !windows

package worker

import (
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

var warnOnce sync.Once

// applyProcessLimits has no OS limits to set on this platform; SQLite's
// heap limit and the front's timeout kill still apply.
func applyProcessLimits(_ int, log hclog.Logger) error {
	warnOnce.Do(func() {
		log.Warn("no OS resource limits on this platform; relying on SQLite's heap limit and the timeout")
	})
	return nil
}

func applyOSMemoryLimit(int, hclog.Logger) error { return nil }

func settleOSMemoryLimit(int, hclog.Logger) error { return nil }

func applyFileLimit(*ipc.Request, hclog.Logger) error { return nil }

// pastFileLimit: this platform sets no file-size limit.
func pastFileLimit(int) bool { return false }
