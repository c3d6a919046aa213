package eval_test

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
)

func ExampleCheck() {
	task := eval.Task{ID: "revenue", Answer: eval.AnswerSchema{Type: eval.TypeScalar}, Tolerance: 0.01}
	want := eval.Answer{Type: eval.TypeScalar, Value: 1128621.7300000002}
	fmt.Println(eval.Check(task, eval.Answer{Type: eval.TypeScalar, Value: 1128621.73}, want))
	fmt.Println(eval.Check(task, eval.Answer{Type: eval.TypeScalar, Value: 1128621}, want))
	// Output:
	// <nil>
	// value 1128621, want 1128621.7300000002 (tolerance 0.01)
}

// How the eval command wires things up; caller is an MCP client session on
// "mcp-sqlite-memory --profile readonly --db PATH", and toolsJSON the
// JSON-encoded tools of its tools/list. (Compiled, not run.)
func ExampleRunAll() {
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
	specs, err := eval.ParseToolSpecs(toolsJSON)
	if err != nil {
		panic(err)
	}
	agent := &eval.Agent{
		APIKey:     os.Getenv("ANTHROPIC_API_KEY"),
		Model:      "claude-sonnet-4-5",
		MaxSteps:   20,
		MaxRetries: 3,
		HTTP:       &http.Client{Timeout: 5 * time.Minute},
		Tools:      specs,
		Caller:     caller,
		Log:        hclog.Default(),
	}
	results, err := eval.RunAll(ctx, dbPath, tasks, agent.Run, hclog.Default())
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
