package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sampledb"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

func sampleDB(ctx context.Context, args []string, env Env) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return &server.UsageError{Msg: "sample-db takes one path\nTry: mcp-sqlite-memory sample-db ./shop.db"}
	}
	if err := sampledb.Write(ctx, args[0]); err != nil {
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote the sample shop database to %s\n", args[0])
	return nil
}

// callTool runs one tool call through the real path: an in-process MCP
// server with its workers, policy and audit log.
func callTool(ctx context.Context, args []string, env Env) error {
	cfg, rest, err := server.ParseConfig(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if len(rest) < 1 || len(rest) > 2 {
		return &server.UsageError{Msg: "call takes a tool name and its arguments as JSON\nTry: mcp-sqlite-memory call --db memory.db read_query '{\"query\":\"SELECT 1\"}'"}
	}
	arguments := map[string]any{}
	if len(rest) == 2 {
		if err := json.Unmarshal([]byte(rest[1]), &arguments); err != nil {
			return &server.UsageError{Msg: fmt.Sprintf("the arguments must be a JSON object: %v\nTry: '{\"query\":\"SELECT 1\"}'", err)}
		}
	}
	cfg.StandbyWorkers = 0 // one call: a standby worker would be wasted
	s, err := server.New(ctx, cfg, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		return err
	}
	defer s.Close()
	c, err := client.NewInProcessClient(s.MCP())
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-sqlite-memory call", Version: server.Version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		return err
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return err
	}
	var names []string
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	if !slices.Contains(names, rest[0]) {
		msg := fmt.Sprintf("no tool named %q; the %s profile has: %s", rest[0], cfg.Profile, strings.Join(names, ", "))
		if near := server.Closest(rest[0], names); near != "" {
			msg += fmt.Sprintf("\nDid you mean %s? Try: mcp-sqlite-memory call --db %s %s '{...}'", near, cfg.DB, near)
		}
		return &server.UsageError{Msg: msg}
	}
	req := mcp.CallToolRequest{}
	req.Params.Name = rest[0]
	req.Params.Arguments = arguments
	res, err := c.CallTool(ctx, req)
	if err != nil {
		return err
	}
	fmt.Fprintln(env.Stdout, ResultText(res))
	if res.IsError {
		return &exitError{status: exitFailed}
	}
	return nil
}

// ResultText joins the text content of a tool result.
func ResultText(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if t, ok := mcp.AsTextContent(c); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// verify checks the chain offline: exit 0 intact, 1 broken, 2 unusable.
func verify(ctx context.Context, args []string, env Env) error {
	cfg, jsonl, fromExport, err := configWithFlag(args, env, "jsonl", "mcp-sqlite-memory verify --db memory.db, or verify --jsonl memory.jsonl")
	if err != nil {
		return err
	}
	if fromExport {
		return verifyJSONL(jsonl, env)
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if err := server.DBPathProblem(cfg.DB); err != nil {
		return err
	}
	store, err := memory.OpenExisting(ctx, cfg.DB, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		const expects = "verify checks an existing memory database, the file a server's --db names (created by mcp-sqlite-memory or the reference server)"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return &exitError{status: exitUsage, msg: fmt.Sprintf("no file at %s: %s; check the path (ls %s)", cfg.DB, expects, filepath.Dir(cfg.DB))}
		case errors.Is(err, memory.ErrNotDatabase):
			return &exitError{status: exitUsage, msg: fmt.Sprintf("%s is not a SQLite database: %s", cfg.DB, expects)}
		case errors.Is(err, memory.ErrNoChain):
			return &exitError{status: exitUsage, msg: fmt.Sprintf("%s has no memory_events table, so no chain to verify: %s", cfg.DB, expects)}
		}
		return &exitError{status: exitUsage, msg: err.Error()}
	}
	defer store.Close()
	v, err := store.Verify(ctx)
	if err != nil {
		return &exitError{status: exitUsage, msg: err.Error()}
	}
	fmt.Fprintln(env.Stdout, v.JSON())
	if !v.OK {
		return &exitError{status: exitFailed}
	}
	return nil
}
