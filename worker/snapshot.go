package worker

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// snapshotPages is what one backup step copies (4 MiB of 4 KiB pages):
// small enough to report progress and to notice the snapshot's deadline
// several times a second.
const snapshotPages = 1024

// snapshotStepHook runs after each backup step; tests slow snapshots down
// with it. afterCopyHook runs between the copy and the write lock; tests
// commit there.
var (
	snapshotStepHook = func() {}
	afterCopyHook    = func() {}
)

// snapshot backs the database up with SQLite's online backup API into
// <dir>/<stem>.<YYYYMMDDTHHMMSS.mmm>Z.db and keeps the newest Keep complete
// snapshots. It returns "" when snapshots are disabled; otherwise it
// returns with the write transaction the statement runs in already begun,
// so that the snapshot holds exactly the state the statement starts from.
//
// The copy is written under a partial name (ending in snapshot.PartialSuffix),
// synced, and renamed only when complete, so a file with a snapshot's name
// is always a whole snapshot. Whatever stops the copy removes the partial
// file here; when the worker is killed, the front removes it (it chose the
// name).
//
// The copy runs in one read transaction, without the write lock, so that
// other writers (the front's audit rows among them) are not held up for as
// long as it takes. Then the write lock is taken, and PRAGMA data_version
// tells whether another connection committed since the copy's read began:
// if one did, the snapshot lacks that commit, which the statement may be
// about to destroy, so the database is copied again, now under the write
// lock, and the first copy is removed.
//
// The snapshot has its own time budget (Snapshot.TimeoutMS), both copies
// together: the statement's clock stops while it runs and starts from zero
// when it is complete. Progress frames tell the front, which moves its kill
// timer the same way.
func (ex *executor) snapshot() (string, error) {
	s := ex.req.Snapshot
	if s == nil || s.Keep <= 0 {
		return "", nil
	}
	c, err := ex.copySnapshot()
	if err != nil {
		return "", err
	}
	path := c.path
	afterCopyHook()
	tx, err := ex.conn.BeginImmediate()
	if err != nil {
		return "", err
	}
	now, err := ex.scalarInt("PRAGMA data_version")
	if err == nil && now != c.version {
		var again string
		if again, err = ex.copyAgain(c.tmp, s, c.started, c.budget); err == nil {
			_ = os.Remove(path)
			path = again
		}
	}
	if err != nil {
		tx.Rollback()
		return "", err
	}
	if f := snapshot.Rotate(s.Dir, s.Stem, s.Keep, path, ex.log); len(f) > 0 {
		ex.foreign = f
	}
	ex.progress.report(ipc.Progress{Phase: ipc.PhaseStatement}, true)
	if ex.clock != nil {
		ex.clock.Reset(time.Duration(ex.req.Limits.TimeoutMS) * time.Millisecond)
	}
	return path, nil
}

// snapshotNow answers the snapshot tool (OpSnapshot): a full copy of the
// database as one read transaction saw it, kept and rotated like a
// destructive query's snapshot. No statement follows, so the copy needs
// no write lock and no second look at data_version.
func (ex *executor) snapshotNow() (*ipc.Response, error) {
	s := ex.req.Snapshot
	if s == nil || s.Keep <= 0 {
		return nil, errcode.New(errcode.InvalidArgument, "snapshot request without a snapshot folder, or with snapshots disabled (keep 0)")
	}
	c, err := ex.copySnapshot()
	if err != nil {
		return nil, err
	}
	if f := snapshot.Rotate(s.Dir, s.Stem, s.Keep, c.path, ex.log); len(f) > 0 {
		ex.foreign = f
	}
	detail := &ipc.Detail{Snapshot: &ipc.SnapshotDetail{Path: c.path, Foreign: ex.foreign}}
	return &ipc.Response{Text: "ok: snapshot written: " + c.path + foreignNote(ex.foreign), Detail: detail}, nil
}

// snapshotCopy is a complete snapshot kept under its name: where it is,
// the partial name a second copy would use, the data_version its read
// transaction started from, and the budget it runs under.
type snapshotCopy struct {
	path, tmp string
	version   int64
	started   time.Time
	budget    time.Duration
}

// copySnapshot stops the request's clock, copies the database in one read
// transaction into the partial file and keeps it under its snapshot name.
func (ex *executor) copySnapshot() (snapshotCopy, error) {
	s := ex.req.Snapshot
	partial, err := partialName(s)
	if err != nil {
		return snapshotCopy{}, err
	}
	if ex.clock != nil && !ex.clock.Stop() {
		// The statement's time ran out while it compiled.
		return snapshotCopy{}, &rawsqlite.Error{Code: rawsqlite.ResultInterrupt, Msg: "interrupted"}
	}
	if err := osfile.MkdirAll(s.Dir, 0o700); err != nil {
		return snapshotCopy{}, errcode.New(errcode.DatabaseUnavailable, "cannot create the snapshot folder: "+err.Error()+"; "+ex.notRun())
	}
	c := snapshotCopy{
		tmp:     filepath.Join(s.Dir, partial),
		started: time.Now(),
		budget:  time.Duration(s.TimeoutMS) * time.Millisecond,
	}
	if c.budget <= 0 {
		c.budget = time.Duration(ex.req.Limits.TimeoutMS) * time.Millisecond
	}
	ex.progress.report(ipc.Progress{Phase: ipc.PhaseSnapshot}, true)

	if err := ex.exec("BEGIN"); err != nil {
		return snapshotCopy{}, err
	}
	// BEGIN starts no read transaction until something reads; the count
	// does, and data_version is then the copy's starting point.
	_, err = ex.scalarInt("SELECT count(*) FROM sqlite_schema")
	if err == nil {
		c.version, err = ex.scalarInt("PRAGMA data_version")
	}
	if err == nil {
		err = ex.copyTo(ex.conn, c.tmp, c.started, c.budget)
	}
	if cerr := ex.exec("COMMIT"); err == nil && cerr != nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(c.tmp)
		return snapshotCopy{}, err
	}
	if c.path, err = snapshot.Keep(c.tmp, s.Dir, s.Stem, "", c.started); err != nil {
		_ = os.Remove(c.tmp)
		return snapshotCopy{}, errcode.New(errcode.DatabaseUnavailable, "the snapshot could not be stored: "+err.Error()+"; "+ex.notRun())
	}
	return c, nil
}

// notRun says what a failed snapshot leaves undone.
func (ex *executor) notRun() string {
	if ex.req.Op == ipc.OpSnapshot {
		return "no snapshot was kept"
	}
	return "nothing was run"
}

// copyAgain copies the database once more while this connection holds the
// write lock, through a second connection (SQLite's backup cannot read from
// a connection in a write transaction), and keeps the copy.
func (ex *executor) copyAgain(tmp string, s *ipc.Snapshot, started time.Time, budget time.Duration) (string, error) {
	ex.log.Info("another connection committed during the snapshot; copying again under the write lock")
	if ex.detail == nil {
		ex.detail = &ipc.Detail{}
	}
	ex.detail.CopiedAgain = true
	ex.copiedAgain = true
	src, err := openConn(ex.req.DB, false)
	if err != nil {
		return "", err
	}
	err = ex.copyTo(src, tmp, started, budget)
	src.Close()
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	path, err := snapshot.Keep(tmp, s.Dir, s.Stem, "", time.Now())
	if err != nil {
		_ = os.Remove(tmp)
		return "", errcode.New(errcode.DatabaseUnavailable, "the snapshot could not be stored: "+err.Error()+"; "+ex.notRun())
	}
	return path, nil
}

// copyTo backs src up into tmp in steps, reporting progress, within what is
// left of budget.
func (ex *executor) copyTo(src *rawsqlite.Conn, tmp string, started time.Time, budget time.Duration) error {
	expired := false
	err := src.BackupSteps(tmp, snapshotPages, func(done, total int) bool {
		if budget > 0 && time.Since(started) > budget {
			expired = true
			return false
		}
		ex.progress.report(ipc.Progress{Phase: ipc.PhaseSnapshot, Done: int64(done), Total: int64(total)}, done == total)
		snapshotStepHook()
		return true
	})
	switch {
	case err == nil:
		return nil
	case expired:
		return errcode.SnapshotTimeout(budget, false)
	}
	return errcode.New(errcode.DatabaseUnavailable, "the snapshot failed: "+err.Error()+"; "+ex.notRun())
}

// partialName is the request's partial file name, checked to be a plain
// name in the snapshot folder, or one made up for a hand-written request.
func partialName(s *ipc.Snapshot) (string, error) {
	if !snapshot.PlainName(s.Stem) {
		return "", errcode.New(errcode.InvalidArgument, fmt.Sprintf("snapshot stem %q must be a plain file name", s.Stem))
	}
	if s.Partial == "" {
		return snapshot.NewPartialName(s.Stem), nil
	}
	if !snapshot.PlainName(s.Partial) || !strings.HasPrefix(s.Partial, s.Stem+".") || !strings.HasSuffix(s.Partial, snapshot.PartialSuffix) {
		return "", errcode.New(errcode.InvalidArgument, fmt.Sprintf("snapshot partial name %q must be a plain file name <stem>.*%s", s.Partial, snapshot.PartialSuffix))
	}
	return s.Partial, nil
}

// foreignNote is what an answer says of the files rotation did not trust,
// or "".
func foreignNote(foreign []string) string {
	if len(foreign) == 0 {
		return ""
	}
	shown := foreign
	more := ""
	if len(shown) > 3 {
		shown, more = shown[:3], fmt.Sprintf(" and %d more", len(foreign)-3)
	}
	return fmt.Sprintf("; note: %d files in the snapshot folder are named after this snapshot (a clock set back, or files this server did not write); they were neither counted toward --snapshots nor removed, and restore should not trust their names: %s%s",
		len(foreign), strings.Join(shown, ", "), more)
}
