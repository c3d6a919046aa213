package eval_test

import (
	"context"
	"fmt"
	"os"

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

// How `mcp-sqlite-memory eval --scripted` wires things up; caller is an
// MCP client session on "mcp-sqlite-memory --profile readonly --db PATH".
// (Compiled, not run.) The model-driven run is package agent's.
func ExampleRunAll() {
	var (
		ctx    = context.Background()
		dbPath = "shop.db"
		caller eval.ToolCaller
	)
	tasks, err := eval.LoadTasks()
	if err != nil {
		panic(err)
	}
	results, err := eval.RunAll(ctx, dbPath, tasks, eval.ScriptedSolver(caller), hclog.Default())
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
