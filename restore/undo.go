package restore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// undoRecord applies an undo record (snapshot.Apply: one transaction, rows
// changed since refused unless o.Force), keeping the state it replaces in
// a safety record of the apply (or a full safety snapshot when the record
// changes the schema), then records the restore event and audit row in a
// transaction of their own: the undo's rows and the memory's are written
// by different connections.
func undoRecord(ctx context.Context, o Options) (*Result, error) {
	started := time.Now()
	info, err := snapshot.ReadRecord(o.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("read the undo record %s: %w", o.Snapshot, err)
	}
	fmt.Fprintf(o.Out, "restore of %s from the undo record %s (taken %s): puts back what this statement changed, %d rows in %s, and nothing else; the memory log, checkpoints and audit log stay as they are:\n  %s\n",
		o.DB, o.Snapshot, snapshot.Printable(info.Taken), info.Rows, snapshot.Printable(info.Tables), snapshot.Printable(oneLine(info.Statement)))
	res := &Result{Plan: &Plan{}}
	db, err := rawsqlite.Open(o.DB, rawsqlite.ReadWrite)
	if err != nil {
		return nil, err
	}
	if err := db.BusyTimeout(o.BusyTimeout); err != nil {
		db.Close()
		return nil, err
	}
	growth := o.MaxGrowth
	if fi, err := os.Stat(o.Snapshot); err == nil && growth > 0 {
		growth += 4 * fi.Size()
	}
	if o.DryRun {
		// The whole apply, every check included, rolled back.
		applied, err := snapshot.Apply(db, o.Snapshot, snapshot.Options{Force: o.Force, DryRun: true, Timeout: o.Timeout, MaxGrowth: growth})
		db.Close()
		if err != nil {
			return nil, busyOr(o.DB, o.BusyTimeout, err)
		}
		res.Undo = &applied
		fmt.Fprintf(o.Out, "would put back: %s\ndry run: nothing was changed\n", undoSummary(&applied))
		return res, nil
	}
	// The state the apply replaces is kept as an undo record of the apply
	// itself, which costs what the apply changes; a record that drops or
	// recreates objects gets a full safety copy instead.
	partial, err := snapshot.NewPartial(o.SnapshotDir, stem(o.DB))
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("could not write the safety record of the current state into %s (%v), so nothing was restored; free space there or pass --snapshot-dir", o.SnapshotDir, err)
	}
	opt := snapshot.Options{Force: o.Force, Timeout: o.Timeout, MaxGrowth: growth, Safety: &snapshot.Safety{
		Partial:   partial,
		Taken:     started.UTC().Format("2006-01-02T15:04:05.000Z"),
		Statement: "restore --db " + o.DB + " " + o.Snapshot + " (which put back what this changed: " + oneLine(info.Statement) + ")",
		Keep: func(p string) (string, error) {
			return snapshot.Keep(p, o.SnapshotDir, stem(o.DB), snapshot.PreRestoreTag, started)
		},
	}}
	applied, err := snapshot.Apply(db, o.Snapshot, opt)
	var full *snapshot.FullCopyNeeded
	if errors.As(err, &full) {
		o.Log.Debug("a full safety snapshot instead of a record of the restore", "why", full.Reason)
		if res.Safety, err = safetySnapshot(o); err != nil {
			db.Close()
			return nil, err
		}
		opt.Safety = nil
		applied, err = snapshot.Apply(db, o.Snapshot, opt)
		if err != nil {
			// Nothing changed: the safety snapshot would only crowd out
			// one worth keeping.
			_ = os.Remove(res.Safety)
		}
	} else if err == nil {
		res.Safety = applied.Safety
	}
	db.Close()
	if err != nil {
		return nil, busyOr(o.DB, o.BusyTimeout, err)
	}
	res.Undo = &applied
	fmt.Fprintf(o.Out, "safety snapshot of the state before: %s\n", res.Safety)
	for _, c := range applied.Overwritten {
		fmt.Fprintf(o.Out, "overwritten (--force): %s\n", c)
	}
	store, err := memory.Open(ctx, o.DB, o.Log)
	if err != nil {
		return res, fmt.Errorf("the undo record was applied, but the restore event could not be recorded: %w", err)
	}
	defer store.Close()
	conn, err := store.Conn(ctx)
	if err != nil {
		return res, err
	}
	defer conn.Close()
	tx, err := conn.BeginTx(ctx, nil)
	if err != nil {
		return res, fmt.Errorf("the undo record was applied, but the restore event could not be recorded: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	if res.Event, err = record(ctx, store, tx, o, res, started); err != nil {
		return res, fmt.Errorf("the undo record was applied, but the restore event could not be recorded: %w", err)
	}
	if err := tx.Commit(); err != nil {
		return res, fmt.Errorf("the undo record was applied, but the restore event could not be recorded: %w", err)
	}
	fmt.Fprintf(o.Out, "restored: %s; memory event %d (kind %s) records it. To go back: mcp-sqlite-memory restore --db %s %s\n", undoSummary(&applied), res.Event.ID, EventKind, o.DB, res.Safety)
	return res, nil
}

// undoSummary says what an applied undo record put back.
func undoSummary(r *snapshot.Result) string {
	s := fmt.Sprintf("%d rows and %d objects put back in %s", r.Rows, r.Objects, snapshot.Printable(r.Tables))
	if n := len(r.Overwritten); n > 0 {
		s += fmt.Sprintf(", %d changed since overwritten (--force)", n)
	}
	return s
}

func oneLine(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 200 {
		s = s[:200] + "..."
	}
	return s
}
