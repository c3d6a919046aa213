package worker

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// undoRecordHook runs after an undo record is written and before it is
// kept; tests stop or kill the worker there.
var undoRecordHook = func() {}

// taken is the snapshot of one destructive statement: a full copy (path
// set before the statement runs) or an undo record (rec set until the
// record is kept, then path).
type taken struct {
	kind    ipc.SnapshotKind // ipc.SnapshotFull or ipc.SnapshotUndo
	why     string           // why this kind, for the audit row
	path    string
	rec     *snapshot.Recorder
	partial string
	started time.Time
	bytes   int64
	rows    int64
	again   bool // a full copy was taken twice (see snapshot)
}

// detail is what the audit row says about the snapshot.
func (t *taken) detail() *ipc.Detail {
	if t == nil {
		return &ipc.Detail{Snapshot: &ipc.SnapshotDetail{}}
	}
	return &ipc.Detail{
		Snapshot:    &ipc.SnapshotDetail{Path: t.path, Kind: t.kind, Why: t.why, Bytes: t.bytes, Rows: t.rows},
		CopiedAgain: t.again,
	}
}

// abort removes an undo record that will not be kept.
func (t *taken) abort() {
	if t != nil && t.rec != nil {
		t.rec.Abort()
		t.rec = nil
	}
}

// beforeDestructive takes the snapshot a destructive statement needs, as
// --snapshot-mode says, and returns with the statement's write
// transaction begun; nil when snapshots are disabled.
func (ex *executor) beforeDestructive() (*taken, error) {
	s := ex.req.Snapshot
	if s == nil || s.Keep <= 0 {
		return nil, nil
	}
	wantUndo, why, err := ex.undoWanted()
	if err != nil {
		return nil, err
	}
	if wantUndo {
		t, err := ex.beginUndo(why)
		var full *snapshot.FullCopyNeeded
		if !errors.As(err, &full) {
			return t, err
		}
		why = full.Reason
	}
	return ex.fullSnapshot(why)
}

// undoWanted applies --snapshot-mode (and --snapshot-full-mb) to this
// database: whether its snapshot is to be an undo record, and why.
func (ex *executor) undoWanted() (bool, string, error) {
	s := ex.req.Snapshot
	switch s.Mode {
	case ipc.SnapshotUndo:
		return true, "--snapshot-mode undo", nil
	case ipc.SnapshotAuto:
		size, err := ex.databaseBytes()
		if err != nil {
			return false, "", err
		}
		if size > int64(s.FullMB)<<20 {
			return true, fmt.Sprintf("the database (%d MiB) is larger than --snapshot-full-mb=%d", size>>20, s.FullMB), nil
		}
		return false, fmt.Sprintf("the database (%d MiB) is at most --snapshot-full-mb=%d", size>>20, s.FullMB), nil
	}
	return false, "--snapshot-mode full", nil
}

// fullSnapshot copies the whole database (see snapshot).
func (ex *executor) fullSnapshot(why string) (*taken, error) {
	path, err := ex.snapshot()
	if err != nil {
		return nil, err
	}
	t := &taken{kind: ipc.SnapshotFull, why: why, path: path, again: ex.copiedAgain}
	if fi, err := os.Stat(path); err == nil {
		t.bytes = fi.Size()
	}
	return t, nil
}

func (ex *executor) databaseBytes() (int64, error) {
	pages, err := ex.scalarInt("PRAGMA page_count")
	if err != nil {
		return 0, err
	}
	size, err := ex.scalarInt("PRAGMA page_size")
	return pages * size, err
}

// beginUndo takes the write lock, copies what the statement will drop or
// alter into a new record and starts recording. *snapshot.FullCopyNeeded
// means the statement needs a full copy instead; nothing is left then.
//
// The statement's clock stops while the copies are made, as for a full
// snapshot.
func (ex *executor) beginUndo(why string) (*taken, error) {
	s := ex.req.Snapshot
	partial, err := partialName(s)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return nil, errcode.New(errcode.DatabaseUnavailable, "cannot create the snapshot folder: "+err.Error()+"; nothing was run")
	}
	if ex.clock != nil && !ex.clock.Stop() {
		return nil, &rawsqlite.Error{Code: rawsqlite.ResultInterrupt, Msg: "interrupted"}
	}
	restart := func() {
		if ex.clock != nil {
			ex.clock.Reset(time.Duration(ex.req.Limits.TimeoutMS) * time.Millisecond)
		}
	}
	ex.progress.report(ipc.Progress{Phase: ipc.PhaseSnapshot}, true)
	t := &taken{kind: ipc.SnapshotUndo, why: why, partial: filepath.Join(s.Dir, partial), started: time.Now()}
	tx, err := ex.conn.BeginImmediate()
	if err != nil {
		restart()
		return nil, err
	}
	plan := snapshot.PlanFrom(ex.actions)
	plan.Skip = policy.IsProtected
	t.rec, err = snapshot.Begin(ex.conn, t.partial, plan)
	if err != nil {
		tx.Rollback()
		restart()
		var full *snapshot.FullCopyNeeded
		if errors.As(err, &full) {
			return nil, err
		}
		return nil, errcode.New(errcode.DatabaseUnavailable, "the undo record could not be started, so the statement was not run: "+err.Error())
	}
	ex.progress.report(ipc.Progress{Phase: ipc.PhaseStatement}, true)
	restart()
	return t, nil
}

// settleUndo follows the statement that ran under an undo record (its
// outcome in returning, changes and runErr): it keeps the record, or,
// when the record cannot hold what the statement did (a definition it
// rewrote, a virtual table it created, more old rows than the heap limit
// allows), rolls the statement back, takes a full copy and runs it again.
func (ex *executor) settleUndo(st *rawsqlite.Stmt, sum policy.Summary, t *taken, returning *result, changes int64, runErr error) (*taken, *result, int64, error) {
	err := runErr
	switch {
	case runErr == nil:
		err = ex.keepUndo(t)
	case outOfMemory(runErr):
		// The session keeps every old row; a full copy needs no memory.
		err = &snapshot.FullCopyNeeded{Reason: fmt.Sprintf("the change is too large to record within --worker-memory-mb=%d", ex.req.Limits.MemoryMB)}
	}
	var full *snapshot.FullCopyNeeded
	if !errors.As(err, &full) {
		if err != nil {
			t.abort()
		}
		return t, returning, changes, err
	}
	t.abort()
	ex.log.Info("the undo record cannot hold this statement; taking a full copy", "why", full.Reason)
	// An out-of-memory error may have rolled the transaction back.
	if !ex.conn.Autocommit() {
		if err := ex.exec("ROLLBACK"); err != nil {
			return nil, nil, 0, err
		}
	}
	// Reset reports the failed step again; the statement is sound and
	// runs again from its start.
	_ = st.Reset()
	t, err = ex.fullSnapshot(full.Reason)
	if err != nil {
		return nil, nil, 0, err
	}
	returning, changes, err = ex.apply(st, sum)
	return t, returning, changes, err
}

// keepUndo finishes the record of the statement that just ran, syncs it
// and gives it its name, all before the statement commits: a committed
// change always has its record. A worker killed before the rename leaves
// only the partial file, which the front removes.
func (ex *executor) keepUndo(t *taken) error {
	s := ex.req.Snapshot
	sum, err := t.rec.Finish(snapshot.Info{Taken: t.started.UTC().Format("2006-01-02T15:04:05.000Z"), Statement: ex.req.SQL, Reason: s.Reason})
	if err != nil {
		t.abort()
		var full *snapshot.FullCopyNeeded
		if errors.As(err, &full) {
			return err
		}
		if code := rawsqlite.ErrorCode(err) & 0xff; code == rawsqlite.ResultInterrupt {
			return err // the statement's time ran out: TIMEOUT
		}
		if outOfMemory(err) {
			return &snapshot.FullCopyNeeded{Reason: fmt.Sprintf("the change is too large to record within --worker-memory-mb=%d", ex.req.Limits.MemoryMB)}
		}
		return errcode.New(errcode.DatabaseUnavailable, "the undo record could not be written, so the statement was rolled back: "+err.Error())
	}
	undoRecordHook()
	path, err := snapshot.Keep(t.partial, s.Dir, s.Stem, snapshot.UndoTag, t.started)
	if err != nil {
		t.abort()
		return errcode.New(errcode.DatabaseUnavailable, "the undo record could not be stored, so the statement was rolled back: "+err.Error())
	}
	t.rec, t.path, t.bytes, t.rows = nil, path, sum.Bytes, sum.Rows
	if f := snapshot.Rotate(s.Dir, s.Stem, s.Keep, path, ex.log); len(f) > 0 {
		ex.foreign = f
	}
	return nil
}
