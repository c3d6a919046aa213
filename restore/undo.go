package restore

import (
	"context"
	"errors"
	"fmt"
	"io"
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
	// What the record says of itself is only its claim: what it holds is
	// told once the apply has checked it (writeSteps).
	fmt.Fprintf(o.Out, "restore of %s from the undo record %s: the memory log, checkpoints and audit log stay as they are. The record says it was taken %s, of this statement (%d rows in %s):\n  %s\n",
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
			return nil, dryRunRefusal(busyOr(o.DB, o.BusyTimeout, err))
		}
		res.Undo = &applied
		fmt.Fprintln(o.Out, "the record passes every check the restore runs; applied, it would:")
		writeSteps(o.Out, &applied, true)
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
	fmt.Fprintln(o.Out, "the record passed every check; applying it:")
	writeSteps(o.Out, &applied, false)
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

// dryRunRefusal says that a dry run's refusal is the restore's own: the
// same checks ran, and the restore would refuse the record for the same
// reason.
func dryRunRefusal(err error) error {
	var h *snapshot.HostileError
	var c *snapshot.ConflictError
	if errors.As(err, &h) || errors.As(err, &c) {
		return fmt.Errorf("dry run: restore refuses this record, for this reason: %w", err)
	}
	return err
}

// writeSteps prints, one line each, every object the applied record
// dropped and created (or, dry, would), those it left as they were, and
// the rows its changeset put back by table: what the record was found to
// hold, not what it says of itself.
func writeSteps(w io.Writer, r *snapshot.Result, dry bool) {
	verb := map[string]string{"drop": "dropped", "create": "created", "rows": "put back"}
	if dry {
		verb = map[string]string{"drop": "drop", "create": "create", "rows": "put back"}
	}
	for _, s := range r.Steps {
		if s.Skipped {
			fmt.Fprintf(w, "  leave %s as it is (already as the record would leave it)\n", s.String())
			continue
		}
		fmt.Fprintf(w, "  %s %s\n", verb[s.Action], s.String())
	}
	if len(r.Steps) == 0 {
		fmt.Fprintln(w, "  create or drop no object")
	}
	for _, c := range r.Changes {
		fmt.Fprintf(w, "  %s %s of %s from its changeset\n", verb["rows"], rowsWord(c.Rows), snapshot.Printable(c.Table))
	}
	if len(r.Changes) == 0 {
		fmt.Fprintln(w, "  put back no row from a changeset")
	}
}

// undoSummary says what an applied undo record put back, in one line,
// naming the tables and objects the apply found (never the record's own
// description of itself).
func undoSummary(r *snapshot.Result) string {
	var tables []string
	seen := map[string]bool{}
	add := func(name string) {
		if k := rawsqlite.FoldName(name); name != "" && !seen[k] {
			seen[k] = true
			tables = append(tables, snapshot.Printable(name))
		}
	}
	var dropped, created []string
	for _, s := range r.Steps {
		if s.Skipped {
			continue
		}
		if s.Type == "table" {
			add(s.Name)
		} else {
			add(s.Table)
		}
		if s.Action == "drop" {
			dropped = append(dropped, s.String())
		} else {
			created = append(created, s.String())
		}
	}
	for _, c := range r.Changes {
		add(c.Table)
	}
	s := fmt.Sprintf("%d rows and %d objects put back", r.Rows, r.Objects)
	if len(tables) > 0 {
		s += " in " + strings.Join(tables, ", ")
	}
	if n := len(r.Overwritten); n > 0 {
		s += fmt.Sprintf(", %d changed since overwritten (--force)", n)
	}
	if len(dropped) > 0 {
		s += "; objects dropped: " + strings.Join(dropped, ", ")
	}
	if len(created) > 0 {
		s += "; objects created: " + strings.Join(created, ", ")
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
