package restore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// ClusterStem is the stem of the snapshots of a cluster's database: a
// front copies its node's db.sqlite, so they are db.<time>Z.db.
const ClusterStem = "db"

// ClusterOptions says what to restore into an rqlite cluster (SPEC 13).
type ClusterOptions struct {
	Nodes    []string // the cluster's nodes, as --rqlite gives them
	Snapshot string   // a full snapshot (destructive_query's or the snapshot tool's)
	// SnapshotDir is where the safety snapshot goes; "" is the
	// snapshot's own folder.
	SnapshotDir string
	Reason      string
	DryRun      bool
	Out         io.Writer
	Log         hclog.Logger
	// Timeout bounds the whole restore (0: DefaultTimeout, negative: no
	// bound).
	Timeout time.Duration
	// MaxRequest bounds the row data of the one request (0:
	// DefaultClusterMaxRequest, negative: no bound).
	MaxRequest int64
}

// testHookClusterPlanned runs between the backup the plan is made from
// and the request; tests write to the cluster there.
var testHookClusterPlanned = func() {}

// clusterRequestTimeout bounds one HTTP request to a node: the restore's
// request can be large, and one left unanswered has an unknown outcome.
const clusterRequestTimeout = 2 * time.Minute

// RunCluster restores the agent's objects of o.Snapshot into the cluster
// in one rqlite request, which every node applies as one transaction:
// it reads the cluster's state (a backup, kept as the safety snapshot),
// plans from it, and sends the drops, creates and rows together with the
// restore's memory event, its audit row and a guard that fails the whole
// request if the cluster changed since the backup. The memory tables are
// never touched.
func RunCluster(ctx context.Context, o ClusterOptions) (_ *Result, err error) {
	started := time.Now()
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	o.Timeout = bound(o.Timeout, DefaultTimeout)
	o.MaxRequest = bound(o.MaxRequest, DefaultClusterMaxRequest)
	if o.Snapshot, err = filepath.Abs(o.Snapshot); err != nil {
		return nil, err
	}
	if o.SnapshotDir == "" {
		o.SnapshotDir = filepath.Dir(o.Snapshot)
	}
	if o.SnapshotDir, err = filepath.Abs(o.SnapshotDir); err != nil {
		return nil, err
	}
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	defer func() {
		if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
			err = fmt.Errorf("the restore ran over its time budget of %s (%v); raise --restore-timeout if the cluster is slow but well", o.Timeout, err)
		}
	}()
	if err := checkClusterSnapshot(o.Snapshot); err != nil {
		return nil, err
	}
	client, err := rqlite.New(o.Nodes, rqlite.Options{Timeout: clusterRequestTimeout, Log: o.Log})
	if err != nil {
		return nil, err
	}

	// The cluster's state now, in a file of the snapshot folder: the plan
	// is made from it, and it is kept as the safety snapshot.
	tmp, err := snapshot.NewPartial(o.SnapshotDir, ClusterStem)
	if err != nil {
		return nil, fmt.Errorf("%v; pass --snapshot-dir for the safety snapshot", err)
	}
	kept := false
	defer func() {
		if !kept {
			_ = os.Remove(tmp)
		}
	}()
	taken := time.Now()
	if err := backup(ctx, client, tmp); err != nil {
		return nil, err
	}
	cp, err := planFromFiles(ctx, tmp, o.Snapshot, o.MaxRequest)
	if err != nil {
		return nil, err
	}
	res := &Result{Plan: cp.Plan}
	fmt.Fprintf(o.Out, "restore of the rqlite cluster %s from %s: the agent's tables, indexes, views and triggers come back from the snapshot; the memory log, checkpoints and audit log stay as they are\n", strings.Join(client.Nodes(), ","), o.Snapshot)
	if o.DryRun {
		cp.Plan.write(o.Out)
		_, stmts, err := cp.request(o, "", started)
		if err != nil {
			return nil, err
		}
		fmt.Fprintf(o.Out, "one request of %d statements (%s of row data) would do it\n", len(stmts), sizeText(cp.Bytes))
		fmt.Fprintln(o.Out, "dry run: nothing was changed")
		return res, nil
	}
	if res.Safety, err = snapshot.Keep(tmp, o.SnapshotDir, ClusterStem, snapshot.PreRestoreTag, taken); err != nil {
		return nil, fmt.Errorf("could not keep the safety snapshot of the cluster's state in %s (%v), so nothing was restored; free space there or pass --snapshot-dir", o.SnapshotDir, err)
	}
	kept = true
	fmt.Fprintf(o.Out, "safety snapshot of the cluster's current state: %s\n", res.Safety)
	cp.Plan.write(o.Out)

	ev, stmts, err := cp.request(o, res.Safety, started)
	if err != nil {
		return nil, err
	}
	res.Event = ev
	testHookClusterPlanned()
	if _, err := client.Execute(ctx, toRqlite(stmts)); err != nil {
		unknown := errors.Is(err, rqlite.ErrUnknownOutcome)
		if err := clusterRestoreError(ctx, client, o, ev, stmts, err); err != nil {
			if !unknown {
				// Nothing changed: the copy is no one's safety snapshot.
				_ = os.Remove(res.Safety)
			}
			return nil, err
		}
		return res, nil // it landed, its answer was lost
	}
	fmt.Fprintf(o.Out, "restored on every node; memory event %d (kind %s) records it. To undo: mcp-sqlite-memory restore --rqlite %s %s\n", ev.ID, EventKind, strings.Join(o.Nodes, ","), res.Safety)
	return res, nil
}

// checkClusterSnapshot refuses what cannot be restored through the
// cluster: no file, a folder, not a database, an undo record.
func checkClusterSnapshot(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return fmt.Errorf("no snapshot at %s (%v)%s", path, err, clusterListing(filepath.Dir(path)))
	}
	if fi.IsDir() {
		return fmt.Errorf("%s is a folder; name one snapshot file in it%s", path, clusterListing(path))
	}
	src, err := rawsqlite.OpenImmutable(path)
	if err != nil {
		return fmt.Errorf("open the snapshot %s: %w", path, err)
	}
	defer src.Close()
	k, err := kindOf(src, path)
	if err != nil {
		return err
	}
	if k == kindUndo {
		return fmt.Errorf("%s is an undo record; a cluster's snapshots are full copies (db.<time>Z.db): pick one of those", path)
	}
	return nil
}

// backup writes the cluster's database to path, synced.
func backup(ctx context.Context, client *rqlite.Client, path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	err = client.Backup(ctx, f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("read the cluster's state (a backup) to plan the restore: %w; nothing was changed. Run restore again once a majority of the nodes is up", err)
	}
	return nil
}

// planFromFiles plans the restore of snap over current, a copy of the
// cluster's state, both opened read-only as immutable files.
func planFromFiles(ctx context.Context, current, snap string, maxBytes int64) (*clusterPlan, error) {
	db, err := sql.Open("sqlite", snapshotURI(current))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH ? AS "+snapSchema, snapshotURI(snap)); err != nil {
		return nil, fmt.Errorf("attach the snapshot %s: %w", snap, err)
	}
	defer func() { _, _ = conn.ExecContext(context.Background(), "DETACH "+snapSchema) }()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	return planCluster(ctx, tx, maxBytes)
}

// request is the whole request: the guard, the agent statements, the
// restore's memory event on the head the plan was made from, and its
// audit row.
func (cp *clusterPlan) request(o ClusterOptions, safety string, started time.Time) (memory.Event, []memory.Stmt, error) {
	summary := cp.Plan.summary()
	parts := []string{"restored the agent's objects from " + o.Snapshot + " through the rqlite cluster (the memory log, checkpoints and audit log were kept)"}
	if r := strings.TrimSpace(o.Reason); r != "" {
		parts = append(parts, "reason: "+r)
	}
	if safety != "" {
		parts = append(parts, "the state before is kept in "+safety)
	}
	parts = append(parts, summary)
	session := memory.NewSession(started)
	ev, plan, err := memory.PlanAppend(cp.Head, started, session, EventKind, strings.Join(parts, "; "), nil)
	if err != nil {
		return ev, nil, err
	}
	detail := map[string]any{
		"snapshot":   o.Snapshot,
		"everything": false,
		"event_id":   ev.ID,
		"changes":    summary,
		"cluster":    strings.Join(o.Nodes, ","),
	}
	if o.Reason != "" {
		detail["reason"] = o.Reason
	}
	if safety != "" {
		detail["safety_snapshot"] = safety
	}
	stmts := make([]memory.Stmt, 0, len(cp.Agent)+len(plan)+2)
	stmts = append(stmts, memory.Stmt{SQL: restoreGuardSQL, Args: []any{cp.Head.Hash, cp.LastAudit}})
	stmts = append(stmts, cp.Agent...)
	stmts = append(stmts, plan...)
	stmts = append(stmts, audit.ClusterInsert(audit.Entry{
		TS: started, Session: session, Tool: "restore",
		Query: sql.NullString{String: o.Snapshot, Valid: true}, OK: true,
		Duration: time.Since(started), Detail: detail,
	}))
	return ev, stmts, nil
}

func toRqlite(stmts []memory.Stmt) []rqlite.Statement {
	out := make([]rqlite.Statement, len(stmts))
	for i, s := range stmts {
		out[i] = rqlite.Statement{SQL: s.SQL, Args: s.Args}
	}
	return out
}

// clusterRestoreError words a failed request for the person: the guard
// (the cluster changed: run again), a statement the cluster refused, no
// cluster, or no answer (then it looks whether the event landed).
func clusterRestoreError(ctx context.Context, client *rqlite.Client, o ClusterOptions, ev memory.Event, stmts []memory.Stmt, err error) error {
	var se *rqlite.StatementError
	switch {
	case errors.As(err, &se) && (se.Index == 0 || memory.ChainConflict(se.Message)):
		return fmt.Errorf("the cluster changed since its state was read for this restore (another front wrote, appended or audited a call); nothing was changed on any node. Run restore again: it plans from the new state")
	case errors.As(err, &se):
		what := ""
		if se.Index >= 0 && se.Index < len(stmts) {
			what = " (" + firstLine(stmts[se.Index].SQL) + ")"
		}
		return fmt.Errorf("the cluster refused statement %d of the restore%s: %s; the request is one transaction, so nothing was changed on any node", se.Index+1, what, se.Message)
	case errors.Is(err, rqlite.ErrUnknownOutcome):
		found, lerr := eventLanded(ctx, client, ev.Hash)
		if lerr == nil && found {
			fmt.Fprintf(o.Out, "restored on every node (the answer was lost, memory event %d is there); memory event %d (kind %s) records it\n", ev.ID, ev.ID, EventKind)
			return nil
		}
		return fmt.Errorf("the cluster did not answer the restore's request (%v): it may or may not be applied. Before running it again, look for its memory event: SELECT id FROM memory_events WHERE hash = '%s' (read through any node at level strong); it is all or nothing", err, ev.Hash)
	case errors.Is(err, rqlite.ErrUnavailable):
		return fmt.Errorf("the rqlite cluster did not take the restore's request (%v); nothing was changed. Run restore again once a majority of the nodes is up", err)
	}
	return fmt.Errorf("the restore's request failed (%w); nothing was changed", err)
}

// eventLanded looks for the restore's event by its hash on the leader.
func eventLanded(ctx context.Context, client *rqlite.Client, hash string) (bool, error) {
	res, err := client.Query(ctx, []rqlite.Statement{{SQL: "SELECT id FROM " + memory.TableEvents + " WHERE hash = ?", Args: []any{hash}}}, rqlite.Linearizable)
	if err != nil {
		return false, err
	}
	return len(res.Results) > 0 && len(res.Results[0].Values) > 0, nil
}

// clusterListing is ClusterSnapshots for a refusal: "; ..." or "".
func clusterListing(dir string) string {
	if l := ClusterSnapshots(dir, nil); l != "" {
		return "; " + l
	}
	return ""
}

// ClusterSnapshots lists the cluster snapshots in dir (db.<time>Z.db and
// the safety snapshots), newest first, for a person who named none, with
// the command that restores the newest: "" when there are none.
func ClusterSnapshots(dir string, nodes []string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	type snap struct {
		name string
		at   time.Time
		size int64
	}
	var ss []snap
	for _, e := range entries {
		at, ok := snapshot.Stamp(e.Name(), ClusterStem)
		if !ok || strings.HasSuffix(e.Name(), snapshot.UndoTag+".db") {
			continue
		}
		fi, err := e.Info()
		if err != nil || !fi.Mode().IsRegular() {
			continue
		}
		ss = append(ss, snap{e.Name(), at, fi.Size()})
	}
	if len(ss) == 0 {
		return ""
	}
	slices.SortFunc(ss, func(a, b snap) int { return b.at.Compare(a.at) })
	var b strings.Builder
	fmt.Fprintf(&b, "the newest snapshots in %s are:", dir)
	for i, s := range ss {
		if i == 10 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(ss)-10)
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s  %s", s.name, s.at.Format(time.RFC3339), sizeText(s.size))
	}
	url := "URL"
	if len(nodes) > 0 {
		url = strings.Join(nodes, ",")
	}
	fmt.Fprintf(&b, "\nTry: mcp-sqlite-memory restore --rqlite %s %s", url, filepath.Join(dir, ss[0].name))
	return b.String()
}
