package tests

// The end-to-end tests run binaries that TestMain builds, so Go's test
// cache cannot see that their results depend on the server's code: without
// this import, a change to the server alone would leave `go test ./...`
// reporting the previous, cached result of this package. Importing the
// command-line package (which reaches the server, the worker and
// everything they use) makes the test binary, and so the cache key, depend
// on that code.
import _ "github.com/mcp-sqlite-memory/mcp-sqlite-memory/cli"
