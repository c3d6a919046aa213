package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	"github.com/mark3labs/mcp-go/mcp"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/sampledb"
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
	model, dbPath, keep *string
	maxSteps            *int
	scripted, verbose   *bool
	only                *stringList
}

// newEvalFlags declares eval's flags; its --help lists them from here.
func newEvalFlags() (*flag.FlagSet, evalOptions) {
	fs := flag.NewFlagSet("eval", flag.ContinueOnError)
	// Parse errors come back as a UsageError; --help prints the common layout.
	fs.SetOutput(io.Discard)
	o := evalOptions{
		model:    fs.String("model", "", "Anthropic `MODEL` to evaluate, e.g. claude-sonnet-4-5 (required unless --scripted)"),
		maxSteps: fs.Int("max-steps", eval.DefaultMaxSteps, "model requests per task"),
		dbPath:   fs.String("db", "", "`PATH` of the database to evaluate on (default: a fresh sample shop database in a temporary folder)"),
		keep:     fs.String("keep", "", "write the sample database into `DIR` and keep it (only without --db)"),
		scripted: fs.Bool("scripted", false, "replay each task's scripted SQL instead of asking a model (tests the server; no key needed)"),
		only:     &stringList{},
	}
	fs.Var(o.only, "task", "run only this task `ID` (repeatable, or a comma-separated list)")
	o.verbose = fs.Bool("v", false, "debug logs on stderr, including the server's")
	return fs, o
}

// evalCmd drives a model (or the scripted solver) through the readonly
// profile's tools, served by this binary as a real stdio child.
func evalCmd(ctx context.Context, args []string, env Env) error {
	fs, o := newEvalFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			subcommands["eval"]().write(env.Stdout)
			return err
		}
		return &config.UsageError{Msg: err.Error() + "\nTry: mcp-sqlite-memory eval --help"}
	}
	model, maxSteps, dbPath, keep, scripted, only, verbose := o.model, o.maxSteps, o.dbPath, o.keep, o.scripted, *o.only, o.verbose
	if fs.NArg() > 0 {
		return &config.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: mcp-sqlite-memory eval --model claude-sonnet-4-5", fs.Arg(0))}
	}
	apiKey := env.Getenv("ANTHROPIC_API_KEY")
	switch {
	case *scripted && *model != "":
		return &config.UsageError{Msg: "--scripted and --model exclude each other\nTry: mcp-sqlite-memory eval --scripted"}
	case !*scripted && *model == "":
		return &config.UsageError{Msg: "eval needs --model (or --scripted for a run without a model)\nTry: mcp-sqlite-memory eval --model claude-sonnet-4-5"}
	case !*scripted && apiKey == "":
		return &config.UsageError{Msg: "ANTHROPIC_API_KEY is not set; the model run needs an Anthropic API key\nTry: export ANTHROPIC_API_KEY=sk-ant-...   (or run eval --scripted, which needs none)"}
	case *maxSteps < 1:
		return &config.UsageError{Msg: fmt.Sprintf("--max-steps must be at least 1, got %d\nTry: --max-steps %d", *maxSteps, eval.DefaultMaxSteps)}
	case *dbPath != "" && *keep != "":
		return &config.UsageError{Msg: "--keep applies only to the generated sample database; drop it when you pass --db"}
	}
	tasks, err := selectTasks(only)
	if err != nil {
		return err
	}

	log := newLogger(env, *verbose)
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()

	db, cleanup, err := evalDatabase(ctx, *dbPath, *keep)
	if err != nil {
		return err
	}
	defer cleanup()
	solver := *model
	if *scripted {
		solver = "scripted"
	}
	log.Info("evaluating", "db", db, "tasks", len(tasks), "solver", solver)

	c, err := startReadonly(ctx, db, *verbose, env.Stderr)
	if err != nil {
		return err
	}
	defer c.Close()
	listed, err := c.ListTools(ctx, mcp.ListToolsRequest{})
	if err != nil {
		return fmt.Errorf("list tools: %w", err)
	}
	caller := eval.ToolCallerFunc(func(ctx context.Context, name string, args map[string]any) (string, bool, error) {
		req := mcp.CallToolRequest{}
		req.Params.Name = name
		req.Params.Arguments = args
		res, err := c.CallTool(ctx, req)
		if err != nil {
			return "", false, err
		}
		return ResultText(res), res.IsError, nil
	})

	solve := eval.ScriptedSolver(caller)
	if !*scripted {
		toolsJSON, err := json.Marshal(listed.Tools)
		if err != nil {
			return err
		}
		specs, err := eval.ParseToolSpecs(toolsJSON)
		if err != nil {
			return err
		}
		agent := &eval.Agent{
			BaseURL:    env.Getenv("ANTHROPIC_BASE_URL"), // a proxy or gateway; empty is the public API
			APIKey:     apiKey,
			Model:      *model,
			MaxSteps:   *maxSteps,
			MaxRetries: 3,
			HTTP:       &http.Client{Timeout: 5 * time.Minute},
			Tools:      specs,
			Caller:     caller,
			Log:        log.Named("agent"),
		}
		solve = agent.Run
	}

	results, runErr := eval.RunAll(ctx, db, tasks, solve, log)
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

// selectTasks returns the embedded tasks, filtered by ID when asked.
func selectTasks(only []string) ([]eval.Task, error) {
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

// evalDatabase returns the absolute path of the database to evaluate on: the
// given one, or a fresh sample in keep (or a temporary folder, which cleanup
// removes).
func evalDatabase(ctx context.Context, given, keep string) (string, func(), error) {
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

// startReadonly starts this binary as a readonly-profile stdio server on db
// and initializes the session. The server's stderr is shown only when
// verbose; the API key is not passed on, the server has no use for it.
func startReadonly(ctx context.Context, db string, verbose bool, stderr io.Writer) (*client.Client, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	childEnv := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "ANTHROPIC_API_KEY=")
	})
	var opts []transport.StdioOption
	if verbose {
		opts = append(opts, transport.WithCommandStderrWriter(stderr))
	}
	c, err := client.NewStdioMCPClientWithOptions(self, childEnv, []string{"--profile", "readonly", "--db", db}, opts...)
	if err != nil {
		return nil, err
	}
	init := mcp.InitializeRequest{}
	init.Params.ProtocolVersion = mcp.LATEST_PROTOCOL_VERSION
	init.Params.ClientInfo = mcp.Implementation{Name: "mcp-sqlite-memory eval", Version: server.Version()}
	if _, err := c.Initialize(ctx, init); err != nil {
		c.Close()
		return nil, fmt.Errorf("initialize the readonly server: %w", err)
	}
	return c, nil
}
