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
	if len(args) > 0 {
		switch args[0] {
		case "worker":
			return worker.Main(env.Stdin, env.Stdout, env.Stderr)
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
