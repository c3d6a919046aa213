// Command mcp-sqlite-memory-eval measures how well a model answers the
// analytics tasks (eval/tasks.json) through the readonly profile's tools:
// it starts mcp-sqlite-memory --profile readonly over stdio, drives the
// model through the Anthropic Messages API (package eval/agent), checks
// every answer against SQLite and prints a report. It is a command of its
// own so that the server binary links no model client; it is not part of
// a release (docs/install.md). See docs/readonly.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/agent"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/eval/harness"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/version"
)

const program = "mcp-sqlite-memory-eval"

// Exit statuses: every task passed; a task failed or the run stopped; the
// command line is wrong.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

func main() {
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr, os.Getenv))
}

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

// options are the command's flags.
type options struct {
	model, dbPath, keep, server *string
	maxSteps                    *int
	verbose                     *bool
	only                        stringList
}

func newFlags() (*flag.FlagSet, *options) {
	fs := flag.NewFlagSet(program, flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	o := &options{
		model:    fs.String("model", "", "Anthropic `MODEL` to evaluate, e.g. claude-sonnet-4-5 (required)"),
		maxSteps: fs.Int("max-steps", agent.DefaultMaxSteps, "model requests per task"),
		dbPath:   fs.String("db", "", "`PATH` of the database to evaluate on (default: a fresh sample shop database in a temporary folder)"),
		keep:     fs.String("keep", "", "write the sample database into `DIR` and keep it (only without --db)"),
		server:   fs.String("server", "", "`PATH` of mcp-sqlite-memory (default: the one beside this program, else on PATH)"),
	}
	fs.Var(&o.only, "task", "run only this task `ID` (repeatable, or a comma-separated list)")
	o.verbose = fs.Bool("v", false, "debug logs on stderr, including the server's")
	return fs, o
}

// usage is --help's text.
func usage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintf(w, `Usage: %s --model MODEL [flags]

Runs the analytics tasks (eval/tasks.json) with a model through
mcp-sqlite-memory --profile readonly over stdio, checks every answer
against SQLite and prints a report. Exit status 1 when any task fails, 2
for a wrong command line. Needs ANTHROPIC_API_KEY; ANTHROPIC_BASE_URL
points it at a proxy or gateway. Without a model, run
mcp-sqlite-memory eval --scripted. See docs/readonly.md.

Flags:
`, program)
	fs.SetOutput(w)
	fs.PrintDefaults()
	fs.SetOutput(io.Discard)
	fmt.Fprintf(w, `
Examples:
  %[1]s --model claude-sonnet-4-5
  %[1]s --model claude-sonnet-4-5 --task revenue_2025,join_latest_orders -v
`, program)
}

// run is the command; it returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) int {
	err := evaluate(ctx, args, stdout, stderr, getenv)
	var ue *config.UsageError
	var failed *tasksFailed
	switch {
	case err == nil:
		return exitOK
	case errors.Is(err, flag.ErrHelp):
		return exitOK
	case errors.As(err, &failed):
		return exitFailed
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "%s: %s\n", program, ue.Msg)
		return exitUsage
	}
	fmt.Fprintf(stderr, "%s: %v\n", program, err)
	return exitFailed
}

// tasksFailed: the run went through and the report says which failed.
type tasksFailed struct{}

func (*tasksFailed) Error() string { return "some tasks failed" }

func evaluate(ctx context.Context, args []string, stdout, stderr io.Writer, getenv func(string) string) error {
	fs, o := newFlags()
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			usage(stdout, fs)
			return err
		}
		return &config.UsageError{Msg: err.Error() + "\nTry: " + program + " --help"}
	}
	apiKey := getenv("ANTHROPIC_API_KEY")
	switch {
	case fs.NArg() > 0:
		return &config.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: %s --model claude-sonnet-4-5", fs.Arg(0), program)}
	case *o.model == "":
		return &config.UsageError{Msg: fmt.Sprintf("--model is required\nTry: %s --model claude-sonnet-4-5   (or mcp-sqlite-memory eval --scripted, which needs no model)", program)}
	case apiKey == "":
		return &config.UsageError{Msg: "ANTHROPIC_API_KEY is not set; the model run needs an Anthropic API key\nTry: export ANTHROPIC_API_KEY=sk-ant-...   (or run mcp-sqlite-memory eval --scripted, which needs none)"}
	case *o.maxSteps < 1:
		return &config.UsageError{Msg: fmt.Sprintf("--max-steps must be at least 1, got %d\nTry: --max-steps %d", *o.maxSteps, agent.DefaultMaxSteps)}
	case *o.dbPath != "" && *o.keep != "":
		return &config.UsageError{Msg: "--keep applies only to the generated sample database; drop it when you pass --db"}
	}
	serverPath, err := findServer(*o.server)
	if err != nil {
		return err
	}
	tasks, err := harness.SelectTasks(o.only)
	if err != nil {
		return err
	}

	level := hclog.Info
	if *o.verbose {
		level = hclog.Debug
	}
	log := hclog.New(&hclog.LoggerOptions{Name: program, Output: stderr, Level: level})
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()

	db, cleanup, err := harness.Database(ctx, *o.dbPath, *o.keep)
	if err != nil {
		return err
	}
	defer cleanup()
	log.Info("evaluating", "db", db, "tasks", len(tasks), "model", *o.model, "server", serverPath)

	var serverLog io.Writer
	if *o.verbose {
		serverLog = stderr
	}
	srv, err := harness.Start(ctx, serverPath, db, program, version.Get().Version, serverLog)
	if err != nil {
		return err
	}
	defer srv.Close()
	toolsJSON, err := srv.ToolsJSON()
	if err != nil {
		return err
	}
	specs, err := agent.ParseToolSpecs(toolsJSON)
	if err != nil {
		return err
	}
	model := &agent.Agent{
		BaseURL:    getenv("ANTHROPIC_BASE_URL"), // a proxy or gateway; empty is the public API
		APIKey:     apiKey,
		Model:      *o.model,
		MaxSteps:   *o.maxSteps,
		MaxRetries: 3,
		HTTP:       &http.Client{Timeout: 5 * time.Minute},
		Tools:      specs,
		Caller:     srv.Caller(),
		Log:        log.Named("agent"),
	}
	results, runErr := eval.RunAll(ctx, db, tasks, model.Run, log)
	// The report of the tasks that ran is printed even when the run stopped.
	if err := eval.WriteReport(stdout, results, true); err != nil {
		return err
	}
	if runErr != nil {
		return fmt.Errorf("evaluation stopped after %d of %d tasks: %w", len(results), len(tasks), runErr)
	}
	if passed, _, _ := eval.Summary(results); passed < len(results) {
		return &tasksFailed{}
	}
	return nil
}

// findServer is the mcp-sqlite-memory to evaluate: flagged, else the one
// beside this program (as go install leaves them), else the one on PATH.
func findServer(flagged string) (string, error) {
	name := "mcp-sqlite-memory"
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if flagged != "" {
		if fi, err := os.Stat(flagged); err != nil || fi.IsDir() {
			return "", &config.UsageError{Msg: fmt.Sprintf("--server %s is not a program\nTry: --server /path/to/%s", flagged, name)}
		}
		return flagged, nil
	}
	if self, err := os.Executable(); err == nil {
		beside := filepath.Join(filepath.Dir(self), name)
		if fi, err := os.Stat(beside); err == nil && !fi.IsDir() {
			return beside, nil
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", &config.UsageError{Msg: fmt.Sprintf("no %s beside this program or on PATH\nTry: --server /path/to/%s, or go install ./cmd/mcp-sqlite-memory", name, name)}
}
