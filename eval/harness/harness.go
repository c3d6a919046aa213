// Package harness sets up what an evaluation runs against: the tasks to
// run, the database (a given one or a fresh sample) and the readonly
// server as a stdio child with an MCP client session on it. Both
// `mcp-sqlite-memory eval --scripted` (package cli) and the model-driven
// cmd/mcp-sqlite-memory-eval use it; it links no model client.
package harness

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
)

// SelectTasks returns the embedded tasks, only those named when only is
// not empty; an unknown name is a usage error that lists the known ones.
func SelectTasks(only []string) ([]eval.Task, error) {
	all, err := eval.LoadTasks()
	if err != nil {
		return nil, err
	}
	if len(only) == 0 {
		return all, nil
	}
	ids := make([]string, len(all))
	for i, t := range all {
		ids[i] = t.ID
	}
	for _, id := range only {
		if !slices.Contains(ids, id) {
			return nil, &config.UsageError{Msg: fmt.Sprintf("unknown task %q\nTry one of: %s", id, strings.Join(ids, ", "))}
		}
	}
	var tasks []eval.Task
	for _, t := range all {
		if slices.Contains(only, t.ID) {
			tasks = append(tasks, t)
		}
	}
	return tasks, nil
}

// Database returns the absolute path of the database to evaluate on: the
// given one, or a fresh sample in keep (or a temporary folder, which
// cleanup removes).
func Database(ctx context.Context, given, keep string) (path string, cleanup func(), err error) {
	nothing := func() {}
	if given != "" {
		abs, err := filepath.Abs(given)
		if err != nil {
			return "", nothing, err
		}
		if fi, err := os.Stat(abs); err != nil || fi.IsDir() {
			return "", nothing, &config.UsageError{Msg: fmt.Sprintf("--db %s is not a database file\nTry: mcp-sqlite-memory sample-db ./shop.db", given)}
		}
		return abs, nothing, nil
	}
	dir, cleanup := keep, nothing
	if dir == "" {
		tmp, err := os.MkdirTemp("", "mcp-sqlite-memory-eval-")
		if err != nil {
			return "", nothing, err
		}
		dir, cleanup = tmp, func() { os.RemoveAll(tmp) }
	}
	abs, err := filepath.Abs(filepath.Join(dir, "shop.db"))
	if err != nil {
		cleanup()
		return "", nothing, err
	}
	if err := sampledb.Write(ctx, abs); err != nil {
		cleanup()
		if errors.Is(err, sampledb.ErrExists) {
			return "", nothing, &config.UsageError{Msg: abs + " exists already; give --keep an empty folder"}
		}
		return "", nothing, err
	}
	return abs, cleanup, nil
}

// Server is a readonly-profile server running as a stdio child, with an
// initialized client session on it.
type Server struct {
	c     *client.Client
	tools []mcp.Tool
}

// Start runs server (the path of mcp-sqlite-memory) as a readonly-profile
// stdio server on db, initializes the session as clientName at version,
// and lists its tools. The server's stderr goes to stderr when it is not
// nil. ANTHROPIC_API_KEY is not passed on: the server has no use for it.
func Start(ctx context.Context, server, db, clientName, version string, stderr io.Writer) (*Server, error) {
	childEnv := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=")
	})
	var opts []transport.StdioOption
	if stderr != nil {
		opts = append(opts, transport.WithCommandStderrWriter(stderr))
	}
	c, err := client.NewStdioMCPClientWithOptions(server, childEnv, []string{"--profile", "readonly", "--db", db}, opts...)
	if err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: clientName, Version: version}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize the readonly server: %w", err)
	}
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		c.Close()
		return nil, fmt.Errorf("list tools: %w", err)
	}
	return &Server{c: c, tools: listed.Tools}, nil
}

// Close ends the session and the server.
func (s *Server) Close() error { return s.c.Close() }

// ToolsJSON is the server's tools as tools/list gave them, JSON-encoded.
func (s *Server) ToolsJSON() ([]byte, error) { return json.Marshal(s.tools) }

// Caller calls the server's tools: the text of a result, and whether it
// is a tool error.
func (s *Server) Caller() eval.ToolCaller {
	return eval.ToolCallerFunc(func(ctx context.Context, name string, args map[string]any) (string, bool, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := s.c.CallTool(ctx, req)
		if err != nil {
			return "", false, err
		}
		var parts []string
		for _, c := range res.Content {
			if t, ok := mcp.AsTextContent(c); ok {
				parts = append(parts, t.Text)
			}
		}
		return strings.Join(parts, "\n"), res.IsError, nil
	})
}
