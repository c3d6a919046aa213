// Command worker executes one request of the worker protocol: a JSON
// request on stdin, a JSON response on stdout, logs on stderr. The server
// runs the same code as `mcp-sqlite-memory worker`; this binary exists for
// fuzzing and debugging (see worker/README.md for the request format).
package main

import (
	"os"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker"
)

func main() {
	os.Exit(worker.Main(os.Stdin, os.Stdout, os.Stderr))
}
