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
	"strings"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/replicate"
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
	if len(args) > 0 {
		if h, ok := subcommands[args[0]]; ok && wantsHelp(args[1:]) {
			h().write(env.Stdout)
			return exitOK
		}
	}
	if len(args) > 0 {
		switch args[0] {
		case "worker":
			return worker.Main(env.Stdin, env.Stdout, env.Stderr)
		case replicate.GuardCommand: // started by the server for --replicate
			return replicate.RunGuard(args[1:], env.Stdin, env.Stderr)
		case "demo":
			return report(env, demo(ctx, args[1:], env))
		case "sample-db":
			return report(env, sampleDB(ctx, args[1:], env))
		case "call":
			return report(env, callTool(ctx, args[1:], env))
		case "verify":
			return report(env, verify(ctx, args[1:], env))
		case "restore":
			return report(env, restoreCmd(ctx, args[1:], env))
		case "export":
			return report(env, exportCmd(ctx, args[1:], env))
		case "import":
			return report(env, importCmd(ctx, args[1:], env))
		case "ui":
			return report(env, uiCmd(ctx, args[1:], env))
		case "eval":
			return report(env, evalCmd(ctx, args[1:], env))
		case "token":
			return report(env, tokenCmd(ctx, args[1:], env))
		case "version":
			if len(args) > 1 {
				return report(env, &config.UsageError{Msg: fmt.Sprintf("version takes no arguments, got %q\nTry: mcp-sqlite-memory version", args[1])})
			}
			printVersion(env.Stdout)
			return exitOK
		case "help":
			return report(env, topHelp(args[1:], env))
		}
	}
	if wantsVersion(args) {
		printVersion(env.Stdout)
		return exitOK
	}
	if wantsHelp(args) {
		config.PrintUsage(env.Stdout)
		return exitOK
	}
	return report(env, serve(ctx, args, env))
}

// byHand is what the server says once when its stdin is a terminal.
const byHand = `mcp-sqlite-memory: serving MCP on stdin and stdout: it expects an MCP host (Claude Code, Claude Desktop, an IDE) to start it, not a person typing. To try it by hand:
  mcp-sqlite-memory demo                                  a guided tour on a scratch database
  mcp-sqlite-memory call --db PATH get_resume_context '{}'   one tool call from the shell
Press Ctrl-D (Ctrl-Z then Enter on Windows) or Ctrl-C to stop.
`

// topHelp is "help" (the server's usage) or "help SUBCOMMAND".
func topHelp(args []string, env Env) error {
	if len(args) == 0 || wantsHelp(args) {
		config.PrintUsage(env.Stdout)
		return nil
	}
	h, ok := subcommands[args[0]]
	if !ok || len(args) > 1 {
		return &config.UsageError{Msg: fmt.Sprintf("no help for %q\nTry: mcp-sqlite-memory --help", strings.Join(args, " "))}
	}
	h().write(env.Stdout)
	return nil
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
	var ue *config.UsageError
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

// oneShotLogger is the logger of a command that runs once and prints its
// answer (call, verify): warnings and errors only, everything with -v.
func oneShotLogger(env Env, verbose bool) hclog.Logger {
	level := hclog.Warn
	if verbose {
		level = hclog.Debug
	}
	return hclog.New(&hclog.LoggerOptions{Name: "mcp-sqlite-memory", Output: env.Stderr, Level: level})
}

// serve is the main job: MCP over stdio until the host closes stdin or
// sends SIGTERM/SIGINT.
func serve(ctx context.Context, args []string, env Env) error {
	cfg, rest, err := config.Parse(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if len(rest) > 0 {
		return &config.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: mcp-sqlite-memory --help", rest[0])}
	}
	// The missing --db first: a warning about the empty path would bury it.
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	log := newLogger(env, cfg.Verbose)
	if w := config.PathWarning(cfg.DB); w != "" && !cfg.Clustered() {
		log.Warn(w)
	}
	if path := env.Getenv("MCP_SQLITE_CPUPROFILE"); path != "" {
		// For profiling the front (see docs/performance.md).
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
	trace := env.Getenv("MCP_SQLITE_CALLTRACE")
	if cfg.HTTP != "" {
		return serveHTTP(ctx, cfg, log, trace)
	}
	s, err := server.New(ctx, cfg, log)
	if err != nil {
		return err
	}
	done, err := traceCalls(s, trace)
	if err != nil {
		return err
	}
	defer done()
	if f, ok := env.Stdin.(*os.File); ok && ipc.IsTerminal(f) {
		// A person, not an MCP host, started it: without a word it
		// would seem to hang.
		fmt.Fprint(env.Stderr, byHand)
	}
	return s.Serve(ctx, env.Stdin, env.Stdout)
}

// traceCalls makes s write each call's stamps to the file at path
// (MCP_SQLITE_CALLTRACE, for measuring a call: docs/performance.md), if
// set. done closes the file.
func traceCalls(s *server.Server, path string) (done func(), err error) {
	if path == "" {
		return func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("MCP_SQLITE_CALLTRACE: %w", err)
	}
	s.TraceCalls(f)
	return func() { f.Close() }, nil
}
