// Command server is mcp-sqlite-memory for `go run ./cmd/server demo` and
// other quick starts from a clone; cmd/mcp-sqlite-memory is the same thin
// main under the name `go install` gives the binary. See
// `mcp-sqlite-memory --help`. It imports cli only.
package main

import (
	"context"
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cli"
)

func main() {
	os.Exit(cli.Run(context.Background(), os.Args[1:], cli.Env{Stdin: os.Stdin, Stdout: os.Stdout, Stderr: os.Stderr}))
}
