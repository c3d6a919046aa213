package tests

import (
	"database/sql"
	"fmt"
	"testing"
	"time"

	"github.com/mark3labs/mcp-go/mcp"
)

func mcpListTools() mcp.ListToolsRequest { return mcp.ListToolsRequest{} }

// lastAuditN returns the n-th newest audit row (1 is the newest).
func lastAuditN(t *testing.T, path string, n int) (tool string, ok bool, errText string) {
	t.Helper()
	db := openDirect(t, path)
	var e sql.NullString
	if err := db.QueryRow(`SELECT tool, ok, error FROM query_log ORDER BY id DESC LIMIT 1 OFFSET ?`, n-1).Scan(&tool, &ok, &e); err != nil {
		t.Fatal(err)
	}
	return tool, ok, e.String
}

// findWorker returns the pid of a worker process of the server of s, or 0.
func findWorker(t *testing.T, s *session) int {
	t.Helper()
	if workers := workersOfServer(serverOf(serverBin, s.db)); len(workers) > 0 {
		return workers[0]
	}
	return 0
}

// isWorkerArgs tells a worker's command line: the lean worker binary, or
// a server binary re-run with "worker".
func isWorkerArgs(args []string) bool {
	switch {
	case len(args) == 1:
		return args[0] == workerBin
	case len(args) == 2:
		return (args[0] == serverBin || args[0] == aloneServerBin) && args[1] == "worker"
	}
	return false
}

func sleepBriefly() { time.Sleep(50 * time.Millisecond) }

// tail is the last n bytes of a long text, for failure messages that must
// stay readable.
func tail(text string, n int) string {
	if len(text) <= n {
		return text
	}
	return fmt.Sprintf("...[%d bytes before]\n%s", len(text)-n, text[len(text)-n:])
}
