package cli

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/restore"
)

// restoreFlags are restore's own flags; the server's (--db,
// --snapshot-dir, -v) are parsed by config.Parse.
type restoreFlags struct {
	reason     string
	everything bool
	dryRun     bool
	force      bool
	timeout    time.Duration // --restore-timeout; 0: restore.DefaultTimeout
	// Cluster mode: --rqlite, --rqlite-data (for the snapshot folder's
	// default) and --max-request-mb; config.Parse would want a front's
	// whole configuration for them.
	rqlite, rqliteData string
	maxRequestMB       int64
}

// splitRestoreFlags takes restore's own flags out of args, wherever they
// are (before or after the snapshot), and returns the rest.
func splitRestoreFlags(args []string) (restoreFlags, []string, error) {
	var f restoreFlags
	var rest []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			rest = append(rest, args[i:]...)
			break
		}
		name, value, hasValue := strings.Cut(strings.TrimLeft(a, "-"), "=")
		if !strings.HasPrefix(a, "-") {
			rest = append(rest, a)
			continue
		}
		switch name {
		case "restore-timeout":
			if !hasValue {
				if i+1 == len(args) {
					return f, nil, &config.UsageError{Msg: "--restore-timeout needs a number of seconds\nTry: mcp-sqlite-memory restore --db memory.db --restore-timeout 1200 SNAPSHOT"}
				}
				i++
				value = args[i]
			}
			secs, err := strconv.ParseFloat(value, 64)
			if err != nil || secs <= 0 || secs > 1e6 {
				return f, nil, &config.UsageError{Msg: fmt.Sprintf("invalid value %q for --restore-timeout: want seconds, more than 0\nTry: --restore-timeout 1200", value)}
			}
			f.timeout = time.Duration(secs * float64(time.Second))
		case "rqlite", "rqlite-data", "max-request-mb":
			if !hasValue {
				if i+1 == len(args) {
					return f, nil, &config.UsageError{Msg: "--" + name + " needs a value\n" + restoreClusterTry}
				}
				i++
				value = args[i]
			}
			switch name {
			case "rqlite":
				f.rqlite = value
			case "rqlite-data":
				f.rqliteData = value
			default:
				mb, err := strconv.ParseInt(value, 10, 64)
				if err != nil || mb <= 0 || mb > 1<<20 {
					return f, nil, &config.UsageError{Msg: fmt.Sprintf("invalid value %q for --max-request-mb: want MiB, more than 0\nTry: --max-request-mb 128", value)}
				}
				f.maxRequestMB = mb
			}
		case "reason":
			if !hasValue {
				if i+1 == len(args) {
					return f, nil, &config.UsageError{Msg: "--reason needs a text\nTry: mcp-sqlite-memory restore --db memory.db --reason \"undo the bad DELETE\" SNAPSHOT"}
				}
				i++
				value = args[i]
			}
			f.reason = value
		case "everything", "dry-run", "force":
			on := !hasValue || value == "true" || value == "1"
			if hasValue && !on && value != "false" && value != "0" {
				return f, nil, &config.UsageError{Msg: fmt.Sprintf("invalid value %q for --%s\nTry: --%s", value, name, name)}
			}
			switch name {
			case "everything":
				f.everything = on
			case "force":
				f.force = on
			default:
				f.dryRun = on
			}
		default:
			rest = append(rest, a)
		}
	}
	return f, rest, nil
}

// restoreTry is the command line restore wants.
const restoreTry = "Try: mcp-sqlite-memory restore --db PATH SNAPSHOT   (for example: restore --db memory.db memory.snapshots/memory.20260101T120000.000Z.db)"

// restoreClusterTry is the command line restore wants in cluster mode.
const restoreClusterTry = "Try: mcp-sqlite-memory restore --rqlite URL[,URL...] SNAPSHOT   (for example: restore --rqlite http://127.0.0.1:4001 /var/lib/rqlite/node1.snapshots/db.20260101T120000.000Z.db)"

// restoreCmd puts a snapshot back (restore.Run): the agent's objects, or the
// whole file with --everything, while no server holds the database.
func restoreCmd(ctx context.Context, args []string, env Env) error {
	f, args, err := splitRestoreFlags(args)
	if err != nil {
		return err
	}
	cfg, rest, err := config.Parse(args, env.Getenv, env.Stdout)
	if err != nil {
		return err
	}
	if f.rqlite != "" || f.rqliteData != "" {
		return restoreCluster(ctx, f, cfg, rest, env)
	}
	if cfg.DB == "" {
		if len(rest) == 2 {
			return &config.UsageError{Msg: fmt.Sprintf("restore needs the database after --db\nTry: mcp-sqlite-memory restore --db %s %s", rest[0], rest[1])}
		}
		return &config.UsageError{Msg: "no database given\n" + restoreTry}
	}
	if len(rest) == 0 {
		// The person needs a name: list what there is to restore.
		if list, err := restore.ListSnapshots(cfg.DB, cfg.SnapshotDir); err == nil {
			if !strings.Contains(list, "\nTry: ") {
				list += "\n" + restoreTry
			}
			return &config.UsageError{Msg: "restore takes the snapshot file to restore; " + list}
		}
	}
	if len(rest) != 1 {
		msg := "restore takes the snapshot file to restore"
		if len(rest) > 1 {
			msg = fmt.Sprintf("restore takes one snapshot file, got %d arguments (%s)", len(rest), strings.Join(rest, " "))
		}
		return &config.UsageError{Msg: msg + "\n" + restoreTry}
	}
	_, err = restore.Run(ctx, restore.Options{
		DB:          cfg.DB,
		Snapshot:    rest[0],
		SnapshotDir: cfg.SnapshotDir,
		Reason:      f.reason,
		Everything:  f.everything,
		DryRun:      f.dryRun,
		Force:       f.force,
		Timeout:     f.timeout,
		MaxGrowth:   int64(cfg.MaxGrowthMB) << 20,
		Out:         env.Stdout,
		Log:         oneShotLogger(env, cfg.Verbose),
	})
	return err
}

// restoreCluster is restore --rqlite: the agent's objects put back
// through the cluster (restore.RunCluster), on every node at once.
func restoreCluster(ctx context.Context, f restoreFlags, cfg *config.Config, rest []string, env Env) error {
	switch {
	case f.rqlite == "":
		return &config.UsageError{Msg: "--rqlite-data names the snapshot folder's node; restore through the cluster needs its nodes too\n" + restoreClusterTry}
	case cfg.DB != "":
		return &config.UsageError{Msg: "--db and --rqlite both given: a cluster's database is in the cluster, not in a file\nTry: drop --db (and MCP_SQLITE_DB), or drop --rqlite"}
	case f.everything:
		return &config.UsageError{Msg: "--everything is not for a cluster: restore never rewinds a cluster's memory (load a backup into an empty cluster with rqlite itself)\nTry: drop --everything"}
	case f.force:
		return &config.UsageError{Msg: "--force is for undo records, and a cluster's snapshots are full copies\nTry: drop --force"}
	}
	var nodes []string
	for _, u := range strings.Split(f.rqlite, ",") {
		norm, err := config.NodeURL(u)
		if err != nil {
			return &config.UsageError{Msg: fmt.Sprintf("--rqlite: %v\n%s", err, restoreClusterTry)}
		}
		nodes = append(nodes, norm)
	}
	dir := cfg.SnapshotDir
	if dir == "" && f.rqliteData != "" {
		dir = strings.TrimRight(f.rqliteData, `/\`) + ".snapshots" // as a front beside that node names it
	}
	if len(rest) != 1 {
		msg := "restore takes the snapshot file to restore"
		if len(rest) > 1 {
			msg = fmt.Sprintf("restore takes one snapshot file, got %d arguments (%s)", len(rest), strings.Join(rest, " "))
		} else if dir != "" {
			if list := restore.ClusterSnapshots(dir, nodes); list != "" {
				return &config.UsageError{Msg: msg + "; " + list}
			}
			msg += "; " + dir + " holds no snapshots (destructive_query and the snapshot tool write them there)"
		}
		return &config.UsageError{Msg: msg + "\n" + restoreClusterTry}
	}
	_, err := restore.RunCluster(ctx, restore.ClusterOptions{
		Nodes:       nodes,
		Snapshot:    rest[0],
		SnapshotDir: dir,
		Reason:      f.reason,
		DryRun:      f.dryRun,
		Timeout:     f.timeout,
		MaxRequest:  f.maxRequestMB << 20,
		Out:         env.Stdout,
		Log:         oneShotLogger(env, cfg.Verbose),
	})
	return err
}
