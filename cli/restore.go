package cli

import (
	"context"
	"fmt"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

// restore copies a snapshot back over the database while no server holds
// it (server.Restore refuses otherwise).
func restore(_ context.Context, args []string, env Env) error {
	cfg, rest, err := server.ParseConfig(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if len(rest) != 1 {
		return &server.UsageError{Msg: "restore takes the snapshot file to restore\nTry: mcp-sqlite-memory restore --db memory.db memory.snapshots/memory.20260101T120000.000Z.db"}
	}
	if err := server.Restore(cfg.DB, rest[0]); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "restored %s from %s\n", cfg.DB, rest[0])
	return nil
}
