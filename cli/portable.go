package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/portable"
)

// takeFlag removes --name VALUE (or --name=VALUE, or one dash) from args,
// for the few flags of a subcommand that the server's flags lack. found is
// false when args do not hold it.
func takeFlag(args []string, name string) (value string, found bool, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			return value, found, append(rest, args[i:]...), nil
		}
		bare := strings.TrimPrefix(strings.TrimPrefix(a, "-"), "-")
		switch {
		case a != bare && bare == name:
			if i+1 >= len(args) {
				return "", false, nil, &config.UsageError{Msg: fmt.Sprintf("--%s needs a value", name)}
			}
			value, found = args[i+1], true
			i++
		case a != bare && strings.HasPrefix(bare, name+"="):
			value, found = bare[len(name)+1:], true
		default:
			rest = append(rest, a)
		}
	}
	return value, found, rest, nil
}

// configWithFlag parses a one-shot command's arguments: its own --name
// flag (see takeFlag), then the server's flags; any other argument is
// refused with try, the command line to type instead.
func configWithFlag(args []string, env Env, name, try string) (cfg *config.Config, value string, found bool, err error) {
	value, found, args, err = takeFlag(args, name)
	if err != nil {
		return nil, "", false, err
	}
	cfg, rest, err := config.Parse(args, env.Getenv, env.Stdout)
	if err != nil {
		return nil, "", false, err
	}
	if len(rest) > 0 {
		return nil, "", false, &config.UsageError{Msg: fmt.Sprintf("unexpected argument %q\nTry: %s", rest[0], try)}
	}
	return cfg, value, found, nil
}

// progressPrinter returns a progress callback that prints one line on
// stderr at most once a second, starting after the first second: short
// chains print nothing.
func progressPrinter(w io.Writer, verb string) func(done, total int64) {
	start, last := time.Now(), time.Time{}
	return func(done, total int64) {
		now := time.Now()
		if now.Sub(start) < time.Second || now.Sub(last) < time.Second {
			return
		}
		last = now
		pct := 100.0
		if total > 0 {
			pct = 100 * float64(done) / float64(total)
		}
		fmt.Fprintf(w, "%s: %d of %d events (%.0f%%)\n", verb, done, total, pct)
	}
}

// exportCmd writes the memory of a database as JSON Lines.
func exportCmd(ctx context.Context, args []string, env Env) error {
	cfg, out, toFile, err := configWithFlag(args, env, "out", "mcp-sqlite-memory export --db memory.db --out memory.jsonl")
	if err != nil {
		return err
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	path := cfg.DB
	if cfg.Clustered() {
		// The memory of a cluster: its rows, copied whole.
		copied, cleanup, err := clusterBackup(ctx, cfg, env)
		if err != nil {
			return err
		}
		defer cleanup()
		path = copied
	}
	store, err := memory.OpenExisting(ctx, path, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		if cfg.Clustered() {
			return &exitError{status: exitUsage, msg: fmt.Sprintf("the cluster at %s holds no memory to export (%v)", strings.Join(cfg.RQLite, ","), err)}
		}
		return &exitError{status: exitUsage, msg: err.Error()}
	}
	defer store.Close()
	w := env.Stdout
	var f *os.File
	if toFile && out != "-" {
		// Written beside the target under a temporary name, renamed when
		// complete: a failed export leaves no partial file behind.
		if f, err = os.CreateTemp(filepath.Dir(out), filepath.Base(out)+".*.tmp"); err != nil {
			return err
		}
		defer func() {
			if f != nil {
				f.Close()
				os.Remove(f.Name())
			}
		}()
		w = f
	}
	st, err := portable.Export(ctx, store, w, progressPrinter(env.Stderr, "export"))
	if err != nil {
		return err
	}
	if f != nil {
		if err := f.Sync(); err != nil {
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
		if err := os.Rename(f.Name(), out); err != nil {
			return err
		}
		f = nil
		fmt.Fprintf(env.Stderr, "exported %d events and %d checkpoints to %s\n", st.Events, st.Checkpoints, out)
	}
	return nil
}

// importCmd builds a new memory from an export.
func importCmd(ctx context.Context, args []string, env Env) error {
	cfg, rest, err := config.Parse(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if err := cfg.RequireDB(); err != nil {
		return err
	}
	if len(rest) != 1 {
		return &config.UsageError{Msg: "import takes the export file to read (- for stdin)\nTry: mcp-sqlite-memory import --db new-memory.db memory.jsonl, or import --rqlite http://127.0.0.1:4001 memory.jsonl"}
	}
	var r io.Reader = env.Stdin
	if rest[0] != "-" {
		f, err := os.Open(rest[0])
		if err != nil {
			return &exitError{status: exitUsage, msg: err.Error()}
		}
		defer f.Close()
		r = f
	}
	if cfg.Clustered() {
		return importCluster(ctx, cfg, rest[0], r, env)
	}
	st, err := portable.Import(ctx, cfg.DB, r, oneShotLogger(env, cfg.Verbose))
	var le *portable.LineError
	switch {
	case errors.As(err, &le):
		return &exitError{status: exitFailed, msg: fmt.Sprintf("%s: %v", rest[0], err)}
	case errors.Is(err, portable.ErrTargetNotEmpty):
		return &exitError{status: exitUsage, msg: fmt.Sprintf("%s: %v", cfg.DB, err)}
	case err != nil:
		return err
	}
	fmt.Fprintf(env.Stdout, "imported %d events and %d checkpoints into %s\n", st.Events, st.Checkpoints, cfg.DB)
	return nil
}

// verifyJSONL checks an export offline, with verify's answers and exit
// statuses: 0 intact, 1 broken, 2 not an export.
func verifyJSONL(path string, env Env) error {
	var r io.Reader = env.Stdin
	if path != "-" {
		f, err := os.Open(path)
		if err != nil {
			return &exitError{status: exitUsage, msg: err.Error()}
		}
		defer f.Close()
		r = f
	}
	v, err := portable.VerifyJSONL(r)
	if err != nil {
		msg := fmt.Sprintf("%s: %v", path, err)
		if path != "-" && isSQLite(path) {
			msg += fmt.Sprintf("\n%s is a SQLite database, not an export. Try: mcp-sqlite-memory verify --db %s", path, path)
		}
		return &exitError{status: exitUsage, msg: msg}
	}
	fmt.Fprintln(env.Stdout, v.JSON())
	if !v.OK {
		return &exitError{status: exitFailed}
	}
	return nil
}

// isSQLite reports whether the file at path starts with SQLite's header.
// Only verify's --jsonl path calls it, in a process with no connection to
// that file.
func isSQLite(path string) bool {
	return fileStarts(path, func(head []byte) bool { return strings.HasPrefix(string(head), "SQLite format 3\x00") })
}

// looksLikeExport reports whether the file at path starts like an export
// (a JSON object per line). Called by verify --db after SQLite refused the
// file, with the connection closed.
func looksLikeExport(path string) bool {
	return fileStarts(path, func(head []byte) bool {
		return strings.HasPrefix(strings.TrimSpace(string(head)), "{")
	})
}

// fileStarts reports what test says of the first bytes of the file.
func fileStarts(path string, test func([]byte) bool) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	head := make([]byte, 64)
	n, _ := io.ReadFull(f, head)
	return test(head[:n])
}
