// Command mcp-sqlite-memory-worker executes one request of the worker
// protocol: a JSON request on stdin, a JSON response on stdout, logs on
// stderr (see worker/README.md for the request format).
//
// The server runs this binary for every statement when it finds it beside
// its own executable (`go install ./cmd/...` puts them together); otherwise
// it re-runs itself as `mcp-sqlite-memory worker`, which executes the same
// code but starts slower, since Go initialises every package a binary
// links and the server links the MCP library. This binary links only what
// a worker uses; deps_test.go keeps it that way.
package main

import (
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker"
)

func main() {
	if len(os.Args) > 1 {
		os.Exit(worker.Args(os.Args[1:], os.Stdout, os.Stderr))
	}
	os.Exit(worker.Main(os.Stdin, os.Stdout, os.Stderr))
}
