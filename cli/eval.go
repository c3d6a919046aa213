package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"syscall"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/harness"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
)

// stringList is a repeatable flag that also splits on commas.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(v string) error {
	for _, s := range strings.Split(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*l = append(*l, s)
		}
	}
	return nil
}

// evalOptions are eval's flags.
type evalOptions struct {
	dbPath, keep      *string
	scripted, verbose *bool
	only              *stringList
}

// newEvalFlags declares eval's flags; its --help lists them from here.
func newEvalFlags() (*flag.FlagSet, evalOptions) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	// Parse errors come back as a UsageError; --help prints the common layout.
	fs.SetOutput(io.Discard)
	o := evalOptions{
		dbPath:   fs.String("db", "", "`PATH` of the database to evaluate on (default: a fresh sample shop database in a temporary folder)"),
		keep:     fs.String("keep", "", "write the sample database into `DIR` and keep it (only without --db)"),
		scripted: fs.Bool("scripted", false, "replay each task's scripted SQL (required: a model's run is mcp-sqlite-memory-eval)"),
		only:     &stringList{},
	}
	fs.Var(o.only, "task", "run only this task `ID` (repeatable, or a comma-separated list)")
	o.verbose = fs.Bool("v", false, "debug logs on stderr, including the server's")
	return fs, o
}

// modelFlags are the flags of the model-driven run, which moved to
// mcp-sqlite-memory-eval: eval names that command when it sees one.
var modelFlags = []string{"model", "max-steps"}

// evalCmd replays the tasks' scripted SQL through the readonly profile's
// tools, served by this binary as a real stdio child. The model-driven
// run is cmd/mcp-sqlite-memory-eval: this binary links no model client.
func evalCmd(ctx context.Context, args []string, env Env) error {
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if strings.HasPrefix(a, "-") && slices.Contains(modelFlags, name) {
			return &config.UsageError{Msg: fmt.Sprintf("%s: a model's evaluation is a command of its own, which this server does not link\nTry: go install ./cmd/mcp-sqlite-memory-eval, then mcp-sqlite-memory-eval --model claude-sonnet-4-5 (or mcp-sqlite-memory eval --scripted, no model)", a)}
		}
		if a == "--" {
			break
		}
	}
	fs, o := newEvalFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			subcommands["eval"]().write(env.Stdout)
			return err
		}
		return &config.UsageError{Msg: err.Error() + "\nTry: mcp-sqlite-memory eval --help"}
	}
	if fs.NArg() > 0 {
		return &config.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: mcp-sqlite-memory eval --scripted", fs.Arg(0))}
	}
	switch {
	case !*o.scripted:
		return &config.UsageError{Msg: "eval needs --scripted (a model's run is mcp-sqlite-memory-eval --model M)\nTry: mcp-sqlite-memory eval --scripted"}
	case *o.dbPath != "" && *o.keep != "":
		return &config.UsageError{Msg: "--keep applies only to the generated sample database; drop it when you pass --db"}
	}
	tasks, err := harness.SelectTasks(*o.only)
	if err != nil {
		return err
	}

	log := newLogger(env, *o.verbose)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()

	db, cleanup, err := harness.Database(ctx, *o.dbPath, *o.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	log.Info("evaluating", "db", db, "tasks", len(tasks), "solver", "scripted")

	self, err := os.Executable()
	if err != nil {
		return err
	}
	var serverLog io.Writer
	if *o.verbose {
		serverLog = env.Stderr
	}
	srv, err := harness.Start(ctx, self, db, "mcp-sqlite-memory eval", server.Version(), serverLog)
	if err != nil {
		return err
	}
	defer srv.Close()

	results, runErr := eval.RunAll(ctx, db, tasks, eval.ScriptedSolver(srv.Caller()), log)
	// The report of the tasks that ran is printed even when the run stopped.
	if err := eval.WriteReport(env.Stdout, results, true); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("evaluation stopped after %d of %d tasks: %w", len(results), len(tasks), runErr)
	}
	if passed, _, _ := eval.Summary(results); passed < len(results) {
		return &exitError{status: exitFailed}
	}
	return nil
}
