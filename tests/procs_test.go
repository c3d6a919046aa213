package tests

import (
	"context"
	"os"
	"os/exec"
	"sync"

	"github.com/mark3labs/mcp-go/client/transport"
)

// startedServers maps a database path to the command of the newest server
// a test started for it. Linux finds servers through /proc; Windows cannot
// read another process's command line, so its process helpers ask here.
var startedServers sync.Map

// serverStarted records that cmd serves db.
func serverStarted(db string, cmd *exec.Cmd) { startedServers.Store(db, cmd) }

// trackServer is the stdio transport's default command, recorded as the
// server of db.
func trackServer(db string, keep ...**exec.Cmd) transport.StdioOption {
	return transport.WithCommandFunc(func(ctx context.Context, command string, env, args []string) (*exec.Cmd, error) {
		cmd := exec.CommandContext(ctx, command, args...)
		cmd.Env = append(os.Environ(), env...)
		serverStarted(db, cmd)
		for _, k := range keep {
			*k = cmd // the test's own handle on the server process
		}
		return cmd, nil
	})
}
