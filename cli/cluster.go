package cli

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/portable"
)

// The one-shot commands of cluster mode (verify, export and import
// --rqlite; docs/cluster.md) need no node beside them: they copy the whole
// database with rqlite's backup endpoint into a private temporary folder
// and run the single-file code on that copy, or build a file and load it.

// clusterTransfer bounds one backup or load: the whole database crosses
// the network in one request.
const clusterTransfer = 10 * time.Minute

// clusterClient is a client of the cluster --rqlite names, for one
// command.
func clusterClient(cfg *config.Config, env Env) (*rqlite.Client, error) {
	c, err := rqlite.New(cfg.RQLite, rqlite.Options{Timeout: clusterTransfer, Log: oneShotLogger(env, cfg.Verbose).Named("rqlite")})
	if err != nil {
		return nil, &config.UsageError{Msg: fmt.Sprintf("--rqlite: %v", err)}
	}
	return c, nil
}

// privateDir makes a temporary folder only this user can read: the copy
// of a memory is as private as the memory.
func privateDir(purpose string) (dir string, cleanup func(), err error) {
	dir, err = os.MkdirTemp("", "mcp-sqlite-memory-"+purpose+"-*")
	if err != nil {
		return "", nil, fmt.Errorf("a temporary folder for the %s: %w", purpose, err)
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}

// clusterBackup copies the cluster's whole database (GET /db/backup, a
// consistent SQLite file) to a file in a private temporary folder;
// cleanup removes it.
func clusterBackup(ctx context.Context, cfg *config.Config, env Env) (path string, cleanup func(), err error) {
	client, err := clusterClient(cfg, env)
	if err != nil {
		return "", nil, err
	}
	dir, cleanup, err := privateDir("backup")
	if err != nil {
		return "", nil, err
	}
	path = filepath.Join(dir, "cluster.db")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err == nil {
		err = client.Backup(ctx, f)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil {
		cleanup()
		return "", nil, &exitError{status: exitUsage, msg: fmt.Sprintf("no copy of the cluster's database could be read from %s (%v)\nCheck that a majority of the nodes is up (curl %s/status), then try again", strings.Join(cfg.RQLite, ","), err, cfg.RQLite[0])}
	}
	return path, cleanup, nil
}

// clusterNotEmpty says what the cluster holds that an import would
// replace ("" when nothing): rqlite's load replaces the whole database,
// so an import goes only into a cluster without the agent's tables and
// without memory or audit rows. The memory's empty tables (a front that
// started made them) are no reason to refuse.
func clusterNotEmpty(ctx context.Context, client *rqlite.Client) (string, error) {
	res, err := client.Query(ctx, []rqlite.Statement{{SQL: `SELECT type, name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name`}}, rqlite.Linearizable)
	if err != nil {
		return "", err
	}
	var agents []string
	server := map[string]bool{}
	for _, row := range res.Results[0].Values {
		typ, _ := row[0].(string)
		name, _ := row[1].(string)
		if policy.IsServerObject(name, name) {
			server[name] = true
			continue
		}
		agents = append(agents, typ+" "+name)
	}
	if len(agents) > 0 {
		return fmt.Sprintf("it holds the agent's objects (%s)", strings.Join(agents, ", ")), nil
	}
	var counts []string
	for _, t := range []string{memory.TableEvents, memory.TableCheckpoints, memory.TableQueryLog} {
		if !server[t] {
			continue
		}
		q, err := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT count(*) FROM " + t}}, rqlite.Linearizable)
		if err != nil {
			return "", err
		}
		if n, _ := q.Results[0].Values[0][0].(int64); n > 0 {
			counts = append(counts, fmt.Sprintf("%d rows in %s", n, t))
		}
	}
	if len(counts) > 0 {
		return "it holds " + strings.Join(counts, ", "), nil
	}
	return "", nil
}

// importCluster builds the memory of an export in a private temporary file
// (portable.Import: every row, the full-text and recall indexes) and loads
// it into an empty cluster (rqlite's /db/load, through the Raft log: every
// node gets it), then adds the cluster's own guard objects
// (memory.ClusterSchema), as a front's start would.
func importCluster(ctx context.Context, cfg *config.Config, name string, r io.Reader, env Env) error {
	client, err := clusterClient(cfg, env)
	if err != nil {
		return err
	}
	nodes := strings.Join(cfg.RQLite, ",")
	held, err := clusterNotEmpty(ctx, client)
	if err != nil {
		return &exitError{status: exitUsage, msg: fmt.Sprintf("the cluster at %s could not be read (%v); nothing was imported\nCheck that a majority of the nodes is up, then try again", nodes, err)}
	}
	if held != "" {
		return &exitError{status: exitUsage, msg: fmt.Sprintf("the cluster at %s is not empty: %s; nothing was imported. An import replaces the whole database, so it goes only into a new cluster\nTry: start a new cluster (docs/cluster.md), or look at this one: mcp-sqlite-memory export --rqlite %s", nodes, held, nodes)}
	}
	dir, cleanup, err := privateDir("import")
	if err != nil {
		return err
	}
	defer cleanup()
	path := filepath.Join(dir, "memory.db")
	st, err := portable.Import(ctx, path, r, oneShotLogger(env, cfg.Verbose))
	var le *portable.LineError
	switch {
	case errors.As(err, &le):
		return &exitError{status: exitFailed, msg: fmt.Sprintf("%s: %v", name, err)}
	case err != nil:
		return err
	}
	if err := rollbackJournal(ctx, path); err != nil {
		return err
	}
	f, err := os.Open(path) // no connection of this process has it now
	if err != nil {
		return err
	}
	defer f.Close()
	if err := client.Load(ctx, f); err != nil {
		return &exitError{status: exitFailed, msg: fmt.Sprintf("the cluster at %s did not take the import (%v)\nCheck with mcp-sqlite-memory verify --rqlite %s before you import again", nodes, err, nodes)}
	}
	stmts := make([]rqlite.Statement, 0, 8)
	for _, p := range memory.ClusterSchema() {
		stmts = append(stmts, rqlite.Statement{SQL: p.SQL, Args: p.Args})
	}
	if _, err := client.Execute(ctx, stmts); err != nil {
		// The memory is in; a front's start adds the guards as well.
		fmt.Fprintf(env.Stderr, "mcp-sqlite-memory: the memory was loaded, but the cluster's guard objects were not added (%v); the first front started on the cluster adds them\n", err)
	}
	fmt.Fprintf(env.Stdout, "imported %d events and %d checkpoints into the cluster at %s\n", st.Events, st.Checkpoints, nodes)
	return nil
}

// rollbackJournal switches the file at path from WAL to a rollback
// journal: a database rqlite loads is one self-contained file.
func rollbackJournal(ctx context.Context, path string) error {
	db, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		return err
	}
	defer db.Close()
	var mode string
	if err := db.QueryRowContext(ctx, "PRAGMA journal_mode = DELETE").Scan(&mode); err != nil {
		return fmt.Errorf("prepare the import for the cluster: %w", err)
	}
	if mode != "delete" {
		return fmt.Errorf("prepare the import for the cluster: the journal mode stayed %q", mode)
	}
	return db.Close()
}

// verifyCluster is verify --rqlite: the chain of a copy of the cluster's
// database, with verify's answers and exit statuses.
func verifyCluster(ctx context.Context, cfg *config.Config, env Env) error {
	path, cleanup, err := clusterBackup(ctx, cfg, env)
	if err != nil {
		return err
	}
	defer cleanup()
	store, err := memory.OpenExisting(ctx, path, oneShotLogger(env, cfg.Verbose))
	if err != nil {
		nodes := strings.Join(cfg.RQLite, ",")
		if errors.Is(err, memory.ErrNoChain) {
			return &exitError{status: exitUsage, msg: fmt.Sprintf("the cluster at %s has no memory_events table, so no chain to verify: start a front on it (docs/cluster.md) or import a memory (mcp-sqlite-memory import --rqlite %s FILE)", nodes, nodes)}
		}
		return &exitError{status: exitUsage, msg: fmt.Sprintf("the cluster at %s: %v", nodes, err)}
	}
	defer store.Close()
	return verifyStore(ctx, store, env)
}
