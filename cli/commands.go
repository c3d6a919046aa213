package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

func sampleDB(ctx context.Context, args []string, env Env) error {
	if len(args) != 1 || strings.HasPrefix(args[0], "-") {
		return &config.UsageError{Msg: "sample-db takes one path\nTry: mcp-sqlite-memory sample-db ./shop.db"}
	}
	if err := sampledb.Write(ctx, args[0]); err != nil {
		if errors.Is(err, sampledb.ErrExists) {
			return fmt.Errorf("%w\nTry: mcp-sqlite-memory sample-db ./shop2.db (a new path), or serve the one there read-only: mcp-sqlite-memory --profile readonly --db %s", err, args[0])
		}
		return err
	}
	fmt.Fprintf(env.Stdout, "wrote the sample shop database to %s\n", args[0])
	return nil
}

// callTool runs one tool call through the real path: an in-process MCP
// server with its workers, policy and audit log.
func callTool(ctx context.Context, args []string, env Env) error {
	mustExist, args := takeBool(args, "must-exist")
	cfg, rest, err := config.Parse(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if len(rest) > 1 {
		if i := slices.IndexFunc(rest[1:], func(a string) bool { return strings.HasPrefix(a, "-") && len(a) > 1 }); i >= 0 {
			return &config.UsageError{Msg: fmt.Sprintf("flags go before the tool name: %q comes after %s\nTry: %s", rest[1+i], rest[0], movedFlags(rest))}
		}
	}
	if len(rest) < 1 || len(rest) > 2 {
		return &config.UsageError{Msg: "call takes a tool name and its arguments as JSON\nTry: mcp-sqlite-memory call --db memory.db read_query '{\"query\":\"SELECT 1\"}'"}
	}
	arguments, err := callArguments(rest)
	if err != nil {
		return err
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if w := config.PathWarning(cfg.DB); w != "" && strings.HasPrefix(cfg.DB, "~") {
		fmt.Fprintln(env.Stderr, "mcp-sqlite-memory: "+w)
	}
	if mustExist && !cfg.Clustered() {
		if _, err := os.Stat(cfg.DB); err != nil {
			abs, _ := filepath.Abs(cfg.DB)
			return &exitError{status: exitUsage, msg: fmt.Sprintf("no database at %s (--must-exist); check the path (ls %s), or leave out --must-exist to create a new one", abs, filepath.Dir(abs))}
		}
	}
	cfg.StandbyWorkers = 0 // one call: a standby worker would be wasted
	s, err := server.New(ctx, cfg, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		return err
	}
	defer s.Close()
	if created := s.Created(); created != "" {
		// A mistyped path makes a new, empty memory: say so where a
		// person looks, with the relative path's resolution if it was one.
		fmt.Fprintf(env.Stderr, "mcp-sqlite-memory: %s; if you meant an existing one, check the path (call --must-exist refuses to create one)\n", created)
		if w := config.PathWarning(cfg.DB); w != "" && !strings.HasPrefix(cfg.DB, "~") {
			fmt.Fprintln(env.Stderr, "mcp-sqlite-memory: "+w)
		}
	}
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
		if near := closestTool(rest[0], names); near != "" {
			msg += fmt.Sprintf("\nDid you mean %s? Try: mcp-sqlite-memory call --db %s %s '{...}'", near, cfg.DB, near)
		}
		return &config.UsageError{Msg: msg}
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
	if cfg.Clustered() {
		return verifyCluster(ctx, cfg, env)
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if err := config.DBPathProblem(cfg.DB); err != nil {
		return err
	}
	store, err := memory.OpenExisting(ctx, cfg.DB, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		const expects = "verify checks an existing memory database, the file a server's --db names (created by mcp-sqlite-memory or the reference server)"
		switch {
		case errors.Is(err, fs.ErrNotExist):
			return &exitError{status: exitUsage, msg: fmt.Sprintf("no file at %s: %s; check the path (ls %s)", cfg.DB, expects, filepath.Dir(cfg.DB))}
		case errors.Is(err, memory.ErrNotDatabase):
			msg := fmt.Sprintf("%s is not a SQLite database: %s", cfg.DB, expects)
			if looksLikeExport(cfg.DB) {
				msg += fmt.Sprintf("\nIt looks like an export (JSON Lines). Try: mcp-sqlite-memory verify --jsonl %s", cfg.DB)
			}
			return &exitError{status: exitUsage, msg: msg}
		case errors.Is(err, memory.ErrNoChain):
			return &exitError{status: exitUsage, msg: fmt.Sprintf("%s has no memory_events table, so no chain to verify: %s", cfg.DB, expects)}
		}
		return &exitError{status: exitUsage, msg: err.Error()}
	}
	defer store.Close()
	return verifyStore(ctx, store, env)
}

// verifyStore prints the verify_chain JSON of store's chain: exit 0
// intact, 1 broken.
func verifyStore(ctx context.Context, store *memory.Store, env Env) error {
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

// takeBool removes the boolean flag --name (or -name, --name=true) from
// args and says whether it was there.
func takeBool(args []string, name string) (bool, []string) {
	var rest []string
	found := false
	for i, a := range args {
		if a == "--" {
			return found, append(rest, args[i:]...)
		}
		switch strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-") {
		case name, name + "=true":
			if a != name {
				found = true
				continue
			}
		case name + "=false":
			continue
		}
		rest = append(rest, a)
	}
	return found, rest
}

// movedFlags is a call command line with the flags that came after the
// tool name moved before it.
func movedFlags(rest []string) string {
	var flags, words []string
	for i := 1; i < len(rest); i++ {
		if a := rest[i]; strings.HasPrefix(a, "-") && len(a) > 1 {
			flags = append(flags, shellQuote(a))
			if !strings.Contains(a, "=") && i+1 < len(rest) && !strings.HasPrefix(rest[i+1], "-") && a != "-v" && a != "--verbose" && a != "--must-exist" {
				flags = append(flags, shellQuote(rest[i+1]))
				i++
			}
			continue
		}
		words = append(words, rest[i])
	}
	line := append([]string{"mcp-sqlite-memory", "call"}, flags...)
	line = append(line, rest[0])
	for _, w := range words {
		line = append(line, shellQuote(w))
	}
	return strings.Join(line, " ")
}

// shellQuote quotes s for a POSIX shell when it needs it (on Windows a
// backslash is a path's separator, not a shell's escape).
func shellQuote(s string) string {
	special := " \t\n'\"\\$`{}[]*?;&|<>()#~!"
	if runtime.GOOS == "windows" {
		special = strings.ReplaceAll(special, "\\", "")
	}
	if s != "" && !strings.ContainsAny(s, special) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// callArguments decodes call's JSON argument: an object, or nothing.
func callArguments(rest []string) (map[string]any, error) {
	arguments := map[string]any{}
	if len(rest) < 2 {
		return arguments, nil
	}
	var v any
	if err := json.Unmarshal([]byte(rest[1]), &v); err != nil {
		return nil, &config.UsageError{Msg: fmt.Sprintf("the arguments must be a JSON object, and %q is not valid JSON (%v); quote it for the shell in single quotes\nTry: mcp-sqlite-memory call --db memory.db read_query '{\"query\":\"SELECT 1\"}'", rest[1], err)}
	}
	obj, ok := v.(map[string]any)
	if !ok {
		return nil, &config.UsageError{Msg: fmt.Sprintf("the arguments must be a JSON object of named arguments, got %s %s\nTry: mcp-sqlite-memory call --db memory.db %s '{\"query\":\"SELECT 1\"}'", server.JSONKind(v), rest[1], rest[0])}
	}
	return obj, nil
}

// closestTool is the tool a mistyped name most likely meant: the nearest
// by edit distance, else the one it begins or is part of ("search" for
// search_text).
func closestTool(name string, tools []string) string {
	if near := config.Closest(name, tools); near != "" {
		return near
	}
	for _, t := range tools {
		if len(name) >= 3 && strings.Contains(t, strings.ToLower(name)) {
			return t
		}
	}
	return ""
}
