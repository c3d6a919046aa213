package agent_test

import (
	"context"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/agent"
)

// How mcp-sqlite-memory-eval wires things up; caller is an MCP client session on
// "mcp-sqlite-memory --profile readonly --db PATH", and toolsJSON the
// JSON-encoded tools of its tools/list. (Compiled, not run.)
func ExampleAgent() {
	var (
		ctx       = context.Background()
		dbPath    = "shop.db"
		caller    eval.ToolCaller
		toolsJSON []byte
	)
	tasks, err := eval.LoadTasks()
	if err != nil {
		panic(err)
	}
	specs, err := agent.ParseToolSpecs(toolsJSON)
	if err != nil {
		panic(err)
	}
	model := &agent.Agent{
		APIKey:     os.Getenv("ANTHROPIC_API_KEY"),
		Model:      "claude-sonnet-4-5",
		MaxSteps:   20,
		MaxRetries: 3,
		HTTP:       &http.Client{Timeout: 5 * time.Minute},
		Tools:      specs,
		Caller:     caller,
		Log:        hclog.Default(),
	}
	results, err := eval.RunAll(ctx, dbPath, tasks, model.Run, hclog.Default())
	if werr := eval.WriteReport(os.Stdout, results, true); werr != nil {
		panic(werr)
	}
	if err != nil {
		panic(err)
	}
	if passed, _, _ := eval.Summary(results); passed < len(tasks) {
		os.Exit(1)
	}
}
