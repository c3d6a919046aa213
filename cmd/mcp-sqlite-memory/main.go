// Command mcp-sqlite-memory serves one SQLite database to an MCP host over
// stdio; see `mcp-sqlite-memory --help`. It is the same program as
// cmd/server under the name it is installed as: `go install ./cmd/...`
// installs it with its lean worker, mcp-sqlite-memory-worker, beside it.
// It imports cli only: the main is a few lines.
package main

import (
	"context"
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
