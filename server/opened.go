package server

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// pathBefore is what was at --db before the server opened it: the survey
// that lets it say what it created or changed (nothing is opened here; a
// stat is safe beside SQLite's locks).
type pathBefore struct {
	abs string
	// folder is the nearest folder of abs that existed; the database's own
	// when nothing was created on the way.
	folder string
	// file says a non-empty file was there (SQLite treats an empty one
	// as a new database).
	file bool
}

func surveyPath(abs string) pathBefore {
	p := pathBefore{abs: abs, folder: filepath.Dir(abs)}
	if fi, err := os.Stat(abs); err == nil && fi.Size() > 0 {
		p.file = true
	}
	for dir := p.folder; ; dir = filepath.Dir(dir) {
		if _, err := os.Stat(dir); err == nil || filepath.Dir(dir) == dir {
			p.folder = dir
			break
		}
	}
	return p
}

// created says, for a database this start created, what it created; ""
// when the file was there.
func (p pathBefore) created() string {
	if p.file {
		return ""
	}
	what := "created a new memory database at " + p.abs
	if dir := filepath.Dir(p.abs); dir != p.folder {
		what += " (and its folder " + dir + ")"
	}
	return what
}

// changed is the warning for a SQLite file that was there but was not yet a
// memory, which Open gave the server's tables; "" otherwise (a new file, or
// a memory database, opened again or given a table it lacked).
func (p pathBefore) changed(o memory.Opened) string {
	if !p.file || !slices.Contains(o.Added, memory.TableEvents) {
		return ""
	}
	var tables []string
	for _, name := range o.Added {
		if name == memory.TableEvents || name == memory.TableCheckpoints || name == memory.TableQueryLog {
			tables = append(tables, name)
		}
	}
	msg := fmt.Sprintf("%s was an existing SQLite database without the server's tables: added %d schema objects (the tables %s, with their indexes, triggers and full-text index)",
		p.abs, len(o.Added), strings.Join(tables, ", "))
	if o.WAL {
		msg += " and switched it to WAL journal mode"
	}
	return msg + ". Your own tables are untouched. To look at another program's database without changing it, run with --profile readonly"
}

// checkWorker refuses, as a usage error naming what to type, a worker that
// cannot serve: a --worker (or MCP_SQLITE_WORKER) that is missing, not a
// program, or not a worker of this version, or a stale worker installed
// beside the server. This binary re-run as its own worker needs no check.
func checkWorker(ctx context.Context, flagged, path string, args []string) error {
	if flagged == "" && len(args) > 0 {
		return nil
	}
	err := ipc.CheckWorker(ctx, path, args)
	if err == nil {
		return nil
	}
	install := "go install ./cmd/mcp-sqlite-memory-worker (from the clone the server came from)"
	if flagged == "" {
		return &config.UsageError{Msg: fmt.Sprintf("the worker beside this server, %s, cannot run statements: %v\nTry: %s, or --worker PATH", path, err, install)}
	}
	try := "--worker /path/to/" + WorkerBinary + ", or leave --worker and MCP_SQLITE_WORKER unset to use the worker beside the server (" + install + ")"
	name := WorkerBinary
	if runtime.GOOS == "windows" {
		name += ".exe"
	}
	if self, e := os.Executable(); e == nil {
		if lean := filepath.Join(filepath.Dir(self), name); lean != path {
			if _, e := os.Stat(lean); e == nil {
				try = "--worker " + lean + ", or leave --worker and MCP_SQLITE_WORKER unset (that one is beside the server)"
			}
		}
	}
	return &config.UsageError{Msg: fmt.Sprintf("--worker %s (from --worker or MCP_SQLITE_WORKER) cannot run statements: %v\nTry: %s", path, err, try)}
}
