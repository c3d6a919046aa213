package cli

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

// demoStep is one scripted tool call and what it shows.
type demoStep struct {
	say  string
	tool string
	args map[string]any
}

var demoSteps = []demoStep{
	{"Start of a session: what did earlier sessions leave?", "get_resume_context", nil},
	{"Discover the tables (system=1 marks the server's own).", "list_tables", nil},
	{"Look at one table.", "describe_table", map[string]any{"table": "orders"}},
	{"Find text: SQL narrows the rows, a regular expression matches inside them.", "search_text", map[string]any{"pattern": `\b(linen|train)\b`, "ignore_case": true, "table": "products", "where": "category <> 'Books'"}},
	{"A join with aggregation, as CSV.", "read_query", map[string]any{"query": `SELECT p.category, count(DISTINCT o.id) AS orders, round(sum(oi.quantity * oi.unit_price), 2) AS revenue
FROM order_items oi JOIN orders o ON o.id = oi.order_id JOIN products p ON p.id = oi.product_id
WHERE o.status <> 'cancelled' GROUP BY p.category ORDER BY revenue DESC`, "limit": 5}},
	{"Save that join as a reusable view with a description.", "create_view", map[string]any{"name": "revenue_by_category", "description": "revenue and order count per product category, cancelled orders excluded", "select_sql": `SELECT p.category, count(DISTINCT o.id) AS orders, round(sum(oi.quantity * oi.unit_price), 2) AS revenue FROM order_items oi JOIN orders o ON o.id = oi.order_id JOIN products p ON p.id = oi.product_id WHERE o.status <> 'cancelled' GROUP BY p.category`}},
	{"A write, with RETURNING.", "write_query", map[string]any{"query": "INSERT INTO products (name, category, price) VALUES ('Demo Lamp', 'Home', 24.5) RETURNING id, name"}},
	{"A DROP in write_query is refused by the authorizer (nothing changes).", "write_query", map[string]any{"query": "DROP TABLE orders"}},
	{"Two statements in one call are refused before anything runs.", "read_query", map[string]any{"query": "SELECT 1; DELETE FROM orders"}},
	{"The server's own tables cannot be changed, whatever the tool.", "destructive_query", map[string]any{"query": "DELETE FROM memory_events", "reason": "demo"}},
	{"A deliberate DELETE: snapshot first, then run.", "destructive_query", map[string]any{"query": "DELETE FROM order_items WHERE order_id IN (SELECT id FROM orders WHERE status = 'cancelled' AND order_date < '2024-07-01')", "reason": "demo: clear the items of old cancelled orders"}},
	{"Remember a finding in the hash-chained log.", "append_event", map[string]any{"kind": "finding", "content": "Electronics is the top category by revenue; see view revenue_by_category."}},
	{"And a checkpoint for the next session.", "checkpoint", map[string]any{"summary": "Explored the shop database; saved revenue_by_category."}},
	{"The next session starts here.", "get_resume_context", nil},
	{"A runaway query (an endless recursive CTE) is stopped at the timeout: the worker interrupts it, and a worker that does not stop is killed. The server keeps serving.", "read_query", map[string]any{"query": "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"}},
	{"Still serving: every call above is in the audit log.", "read_query", map[string]any{"query": "SELECT id, tool, ok, duration_ms, substr(error, 1, 60) AS error FROM query_log ORDER BY id"}},
	{"The chain verifies.", "verify_chain", nil},
}

// demo writes the sample database, starts this binary as a real stdio MCP
// server and walks a scripted session through it, printing every call.
func demo(ctx context.Context, args []string, env Env) error {
	fs := flag.NewFlagSet("demo", flag.ContinueOnError)
	fs.SetOutput(io.Discard) // errors come back as a UsageError, --help in the common layout
	keep := fs.String("keep", "", "write the database into DIR and keep it (default: a temporary folder, removed afterwards)")
	if err := fs.Parse(args); err != nil {
		if err == flag.ErrHelp {
			subcommands["demo"]().write(env.Stdout)
			return err
		}
		return &config.UsageError{Msg: err.Error() + "\nTry: mcp-sqlite-memory demo --keep ./demo"}
	}
	dir := *keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "mcp-sqlite-memory-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	db := filepath.Join(dir, "shop.db")
	if _, err := os.Stat(db); err == nil {
		return &config.UsageError{Msg: db + " exists already; give --keep an empty folder"}
	}
	if err := sampledb.Write(ctx, db); err != nil {
		return err
	}
	self, err := os.Executable()
	if err != nil {
		return err
	}
	out := env.Stdout
	fmt.Fprintf(out, "Sample shop database: %s\nStarting: %s --db %s --query-timeout 2\n\n", db, filepath.Base(self), db)

	c, err := client.NewStdioMCPClient(self, os.Environ(), "--db", db, "--query-timeout", "2")
	if err != nil {
		return err
	}
	defer c.Close()
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-sqlite-memory demo", Version: server.Version()}
	info, err := c.Initialize(ctx, init)
	if err != nil {
		return fmt.Errorf("initialize: %w", err)
	}
	tools, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return err
	}
	names := make([]string, 0, len(tools.Tools))
	for _, t := range tools.Tools {
		names = append(names, t.Name)
	}
	fmt.Fprintf(out, "== initialize: %s %s, %d tools: %s\n\n", info.ServerInfo.Name, info.ServerInfo.Version, len(names), strings.Join(names, ", "))

	for i, step := range demoSteps {
		req := mcp.CallToolRequest{}
		req.Params.Name = step.tool
		req.Params.Arguments = step.args
		start := time.Now()
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return fmt.Errorf("%s: %w", step.tool, err)
		}
		printStep(out, i+1, step, res, time.Since(start))
	}
	if *keep != "" {
		fmt.Fprintf(out, "The database is kept in %s; try:\n  mcp-sqlite-memory verify --db %s\n", dir, db)
	}
	return nil
}

func printStep(w io.Writer, n int, step demoStep, res *mcp.CallToolResult, took time.Duration) {
	argText := "{}"
	if step.args != nil {
		b, _ := json.Marshal(step.args)
		argText = string(b)
	}
	fmt.Fprintf(w, "== %d. %s\n-> %s %s\n", n, step.say, step.tool, argText)
	status := "ok"
	if res.IsError {
		status = "tool error"
	}
	fmt.Fprintf(w, "<- %s in %s:\n", status, took.Round(time.Millisecond))
	for _, line := range strings.Split(ResultText(res), "\n") {
		fmt.Fprintf(w, "   %s\n", line)
	}
	fmt.Fprintln(w)
}
