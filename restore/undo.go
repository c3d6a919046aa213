package restore

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/undo"
)

// undoRecord applies an undo record (undo.Apply: one transaction, rows
// changed since refused unless o.Force), after a safety snapshot of the
// state it replaces, then records the restore event and audit row in a
// transaction of their own: the undo's rows and the memory's are written
// by different connections.
func undoRecord(ctx context.Context, o Options) (*Result, error) {
	started := time.Now()
	info, err := undo.ReadRecord(o.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("read the undo record %s: %w", o.Snapshot, err)
	}
	fmt.Fprintf(o.Out, "restore of %s from the undo record %s (taken %s): puts back what this statement changed, %d rows in %s, and nothing else; the memory log, checkpoints and audit log stay as they are:\n  %s\n",
		o.DB, o.Snapshot, info.Taken, info.Rows, info.Tables, oneLine(info.Statement))
	if o.DryRun {
		fmt.Fprintln(o.Out, "dry run: nothing was changed")
		return &Result{Plan: &Plan{}}, nil
	}
	res := &Result{Plan: &Plan{}}
	if res.Safety, err = safetySnapshot(o); err != nil {
		return nil, err
	}
	db, err := rawsqlite.Open(o.DB, rawsqlite.ReadWrite)
	if err != nil {
		return nil, err
	}
	if err := db.BusyTimeout(o.BusyTimeout); err != nil {
		db.Close()
		return nil, err
	}
	applied, err := undo.Apply(db, o.Snapshot, undo.Options{Force: o.Force, Protected: memoryObject})
	db.Close()
	if err != nil {
		// Nothing changed: the safety snapshot would only crowd out one
		// worth keeping.
		_ = os.Remove(res.Safety)
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
func undoSummary(r *undo.Result) string {
	s := fmt.Sprintf("%d rows and %d objects put back in %s", r.Rows, r.Objects, r.Tables)
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
