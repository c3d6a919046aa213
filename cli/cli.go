package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"syscall"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/server"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker"
)

// Exit statuses.
const (
	exitOK     = 0
	exitFailed = 1
	exitUsage  = 2
)

// Env carries the process's standard streams and environment, so that tests
// can run commands in-process.
type Env struct {
	Stdin  io.Reader
	Stdout io.Writer
	Stderr io.Writer
	Getenv func(string) string
}

// Run executes the command line args (without the program name) and
// returns the exit status.
func Run(ctx context.Context, args []string, env Env) int {
	if env.Getenv == nil {
		env.Getenv = os.Getenv
	}
	if len(args) > 1 && isHelp(args[1]) {
		if text, ok := subcommandHelp[args[0]]; ok {
			fmt.Fprint(env.Stdout, text)
			return exitOK
		}
	}
	if len(args) > 0 {
		switch args[0] {
		case "worker":
			return worker.Main(env.Stdin, env.Stdout, env.Stderr)
		case server.GuardCommand: // started by the server for --replicate
			return server.RunLitestreamGuard(args[1:], env.Stdin, env.Stderr)
		case "demo":
			return report(env, demo(ctx, args[1:], env))
		case "sample-db":
			return report(env, sampleDB(ctx, args[1:], env))
		case "call":
			return report(env, callTool(ctx, args[1:], env))
		case "verify":
			return report(env, verify(ctx, args[1:], env))
		case "restore":
			return report(env, restore(ctx, args[1:], env))
		case "eval":
			return report(env, evalCmd(ctx, args[1:], env))
		case "help":
			server.PrintUsage(env.Stdout)
			return exitOK
		}
	}
	return report(env, serve(ctx, args, env))
}

func isHelp(arg string) bool {
	switch arg {
	case "-h", "-help", "--help", "help":
		return true
	}
	return false
}

// subcommandHelp is each subcommand's usage, with examples.
var subcommandHelp = map[string]string{
	"demo": `Usage: mcp-sqlite-memory demo [--keep DIR]

Writes the sample shop database, starts this binary as a real stdio MCP
server and walks a scripted session through it, printing every call.
  --keep DIR   write the database into DIR and keep it (default: a temporary folder)

Example:
  mcp-sqlite-memory demo --keep ./demo && mcp-sqlite-memory verify --db ./demo/shop.db
`,
	"sample-db": `Usage: mcp-sqlite-memory sample-db PATH

Writes the deterministic sample shop database (customers, products, orders,
order_items; 2024-2025) to PATH; refuses to overwrite a non-empty file.

Example:
  mcp-sqlite-memory sample-db ./shop.db
`,
	"call": `Usage: mcp-sqlite-memory call --db PATH [flags] TOOL ['{"arg":...}']

Runs one tool call through the real path (worker, policy, audit) and prints
its text; exit 1 when the tool answers an error. Takes every server flag.

Examples:
  mcp-sqlite-memory call --db memory.db read_query '{"query":"SELECT count(*) FROM query_log"}'
  mcp-sqlite-memory call --db memory.db append_event '{"content":"switched to WAL","kind":"decision"}'
`,
	"verify": `Usage: mcp-sqlite-memory verify --db PATH

Checks the memory chain offline and prints the verify_chain JSON.
Exit 0: intact; 1: broken; 2: not a usable memory database.

Example:
  mcp-sqlite-memory verify --db ~/.local/share/agent-memory/memory.db
`,
	"restore": `Usage: mcp-sqlite-memory restore --db PATH SNAPSHOT

Copies a snapshot written by destructive_query back over the database. It
refuses while any server holds the file: stop the MCP session first.

Example:
  mcp-sqlite-memory restore --db memory.db memory.snapshots/memory.20261130T101500.123Z.db
`,
	"worker": `Usage: mcp-sqlite-memory worker < request.json

Runs one worker request (JSON on stdin) and writes one response (a JSON
header line and the raw result) on stdout; see worker/README.md.

Example:
  echo '{"v":1,"op":"query","db":"shop.db","mode":"read","sql":"SELECT 1","caps":{"max_rows":10,"max_result_bytes":4096,"max_cell_chars":100,"max_update_rows":1},"limits":{"timeout_ms":5000,"memory_mb":256,"max_growth_mb":1,"sandbox":false}}' | mcp-sqlite-memory worker
`,
}

// exitError carries a chosen exit status with its message.
type exitError struct {
	status int
	msg    string
}

func (e *exitError) Error() string { return e.msg }

// report prints err (if any) on stderr and maps it to an exit status.
func report(env Env, err error) int {
	if err == nil {
		return exitOK
	}
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.msg != "" {
			fmt.Fprintln(env.Stderr, "mcp-sqlite-memory: "+ee.msg)
		}
		return ee.status
	}
	fmt.Fprintln(env.Stderr, "mcp-sqlite-memory: "+err.Error())
	var ue *server.UsageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitFailed
}

func newLogger(env Env, verbose bool) hclog.Logger {
	level := hclog.Info
	if verbose {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: "mcp-sqlite-memory", Output: env.Stderr, Level: level})
}

// serve is the main job: MCP over stdio until the host closes stdin or
// sends SIGTERM/SIGINT.
func serve(ctx context.Context, args []string, env Env) error {
	cfg, rest, err := server.ParseConfig(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &server.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: mcp-sqlite-memory --help", rest[0])}
	}
	log := newLogger(env, cfg.Verbose)
	if path := env.Getenv("MCP_SQLITE_CPUPROFILE"); path != "" {
		// For profiling the front (see README, Performance).
		f, err := os.Create(path)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); f.Close() }()
	}
	if path := env.Getenv("MCP_SQLITE_MEMPROFILE"); path != "" {
		defer func() {
			if f, err := os.Create(path); err == nil {
				runtime.GC()
				_ = pprof.WriteHeapProfile(f)
				f.Close()
			}
		}()
	}
	ctx, stop := signal.NotifyContext(ctx, syscall.SIGTERM, os.Interrupt)
	defer stop()
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	return s.Serve(ctx, env.Stdin, env.Stdout)
}
