package cli

import (
	"context"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

// evalCmd drives a model through the readonly profile's tools.
func evalCmd(context.Context, []string, Env) error {
	return &server.UsageError{Msg: "eval is not available in this build"}
}
