package restore

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"modernc.org/sqlite"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// testHookLocked runs where a whole-file copy holds the write lock;
// tests check that it does.
var testHookLocked = func() {}

// EventKind is the kind of the memory event a restore appends.
const EventKind = "restore"

// DefaultBusyTimeout is how long restore waits for another program's write
// lock before it refuses: short, since a person is waiting and the answer
// (end that program's transaction) is theirs to act on.
const DefaultBusyTimeout = time.Second

// Options says what to restore.
type Options struct {
	DB       string // the database to restore into
	Snapshot string // the snapshot file to restore from
	// SnapshotDir is where the safety snapshot goes (the server's
	// --snapshot-dir) and where a missing snapshot is looked for.
	SnapshotDir string
	Reason      string // recorded in the restore event and the audit row
	// Everything copies the whole snapshot over the database, the memory
	// tables too, instead of the agent's objects only.
	Everything bool
	// DryRun prints what the restore would change and changes nothing.
	DryRun bool
	// Force applies an undo record over rows changed since it was taken
	// (see snapshot.Options.Force).
	Force       bool
	Out         io.Writer // the plan and the outcome, for a person
	Log         hclog.Logger
	BusyTimeout time.Duration // 0: DefaultBusyTimeout
	// Timeout bounds the time a restore may take (0: DefaultTimeout,
	// negative: no bound); past it the restore is rolled back.
	Timeout time.Duration
	// MaxGrowth bounds how many bytes the restore may add to the
	// database beyond four times the snapshot's own size (0:
	// DefaultMaxGrowth, negative: no bound).
	MaxGrowth int64
}

// DefaultTimeout and DefaultMaxGrowth bound a restore (SPEC 5.6): a
// record or snapshot is untrusted input, and one that would run forever
// or fill the disk is stopped and rolled back. An honest restore puts
// back at most about what its file holds, plus its indexes.
const (
	DefaultTimeout   = 10 * time.Minute
	DefaultMaxGrowth = 512 << 20
)

// Result is what a restore did.
type Result struct {
	Plan   *Plan
	Undo   *snapshot.Result // set when the snapshot was an undo record
	Safety string           // the safety snapshot ("" when there was nothing to keep)
	Event  memory.Event
}

// Run restores o.Snapshot into o.DB (see the package documentation). Every
// refusal happens before anything changed and says what to do.
func Run(ctx context.Context, o Options) (*Result, error) {
	o, err := o.withDefaults()
	if err != nil {
		return nil, err
	}
	fresh, err := checkFiles(o)
	if err != nil {
		return nil, err
	}

	// The snapshot is another file: reading it through SQLite here, before
	// the database's lock descriptor is taken, is safe.
	src, err := rawsqlite.OpenImmutable(o.Snapshot)
	if err != nil {
		return nil, fmt.Errorf("open the snapshot %s: %w", o.Snapshot, err)
	}
	defer src.Close()
	k, err := kindOf(src, o.Snapshot)
	if err != nil {
		return nil, err
	}

	hold, err := lockExclusive(o.DB)
	serving := errors.Is(err, osfile.ErrHeld)
	if err != nil && !(serving && o.DryRun && !fresh) {
		var he *heldError
		if errors.As(err, &he) {
			// Read before this process opens the database through SQLite.
			hs, _ := otherHolders(o.DB)
			he.holders = holdersText(hs)
		}
		return nil, err
	}
	if hold != nil {
		// Closed after every connection below is: closing a descriptor of
		// the database drops the POSIX locks SQLite holds through its own.
		defer hold.Close()
	}
	hs, err := otherHolders(o.DB)
	if err != nil {
		o.Log.Debug("could not read the WAL index locks", "error", err)
	}
	if serving {
		// A dry run changes nothing, so it runs beside a server; its
		// write transaction is rolled back.
		fmt.Fprintf(o.Out, "note: a server is using %s%s; this dry run changes nothing, the restore itself needs it stopped\n", o.DB, holdersText(hs))
	} else {
		if err := busyError(o.DB, hs); err != nil {
			return nil, err
		}
		for _, h := range hs {
			fmt.Fprintf(o.Out, "note: %s has the database open; it sees the restored state from its next transaction on\n", h.describe())
		}
	}
	if fresh {
		fmt.Fprintf(o.Out, "%s does not exist: the whole snapshot is restored into a new file\n", o.DB)
		o.Everything = true
	}
	switch {
	case k == kindUndo && o.Everything:
		if fresh {
			return nil, fmt.Errorf("%s does not exist, and an undo record holds only what one statement changed; restore a full snapshot (<stem>.<time>Z.db) first", o.DB)
		}
		return nil, fmt.Errorf("%s is an undo record: it holds what one statement changed, not the whole file, so --everything cannot use it; leave --everything out, or pick a full snapshot (<stem>.<time>Z.db)", o.Snapshot)
	case k == kindUndo:
		src.Close()
		return undoRecord(ctx, o)
	case o.Everything:
		return wholeFile(ctx, o, src, fresh)
	case k == kindFull:
		src.Close() // the transaction reads it attached instead
		return agentObjects(ctx, o)
	}
	return nil, fmt.Errorf("restore of a %s is not supported", k)
}

// withDefaults fills in what o leaves out (the DefaultX bounds; a
// negative bound becomes 0, no bound) and makes its paths absolute; the
// snapshot folder defaults to <stem>.snapshots beside the database.
func (o Options) withDefaults() (Options, error) {
	if o.Out == nil {
		o.Out = io.Discard
	}
	if o.Log == nil {
		o.Log = hclog.NewNullLogger()
	}
	if o.BusyTimeout <= 0 {
		o.BusyTimeout = DefaultBusyTimeout
	}
	o.Timeout = bound(o.Timeout, DefaultTimeout)
	o.MaxGrowth = bound(o.MaxGrowth, DefaultMaxGrowth)
	var err error
	if o.DB, err = filepath.Abs(o.DB); err != nil {
		return o, err
	}
	if o.Snapshot, err = filepath.Abs(o.Snapshot); err != nil {
		return o, err
	}
	if o.SnapshotDir == "" {
		o.SnapshotDir = filepath.Join(filepath.Dir(o.DB), stem(o.DB)+".snapshots")
	}
	if o.SnapshotDir, err = filepath.Abs(o.SnapshotDir); err != nil {
		return o, err
	}
	return o, nil
}

// bound is an Options bound as restore uses it: 0 asks for def, a
// negative value for no bound (0).
func bound[T time.Duration | int64](v, def T) T {
	switch {
	case v == 0:
		return def
	case v < 0:
		return 0
	}
	return v
}

// checkFiles refuses a snapshot that is missing, a folder or the database
// itself, and reports whether the database is yet to be created (fresh).
func checkFiles(o Options) (fresh bool, err error) {
	snapInfo, err := os.Stat(o.Snapshot)
	if err != nil {
		return false, missingSnapshot(o, err)
	}
	if snapInfo.IsDir() {
		return false, fmt.Errorf("%s is a folder; name one snapshot file in it%s", o.Snapshot, newestHint(o, o.Snapshot))
	}
	dbInfo, err := os.Stat(o.DB)
	if errors.Is(err, fs.ErrNotExist) {
		return true, nil
	}
	if err != nil {
		return false, err
	}
	if os.SameFile(dbInfo, snapInfo) {
		return false, fmt.Errorf("%s is the database itself; name a snapshot of it%s", o.Snapshot, newestHint(o, o.SnapshotDir))
	}
	return false, nil
}

// Snapshot kinds. A full copy is any SQLite database; an undo record
// (SPEC 5.6, package snapshot) is told apart by its own tables and applied by
// undoRecord.
const (
	kindFull = "full snapshot"
	kindUndo = "undo record"
)

// kindOf checks that the snapshot is a SQLite database with something in
// it, and tells which kind of snapshot it is.
func kindOf(src *rawsqlite.Conn, path string) (string, error) {
	var n int64
	err := src.QueryRow("SELECT count(*) FROM sqlite_schema", func(st *rawsqlite.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	})
	if err == nil && n == 0 {
		return "", fmt.Errorf("%s is an empty database (no tables): there is nothing to restore from it; pick a snapshot from the snapshot folder", path)
	}
	if err != nil {
		if rawsqlite.ErrorCode(err)&0xff == rawsqlite.ResultNotADB {
			return "", fmt.Errorf("%s is not a SQLite database; pick a file from the snapshot folder (<stem>.<time>Z.db)", path)
		}
		if rawsqlite.ErrorCode(err)&0xff == rawsqlite.ResultCorrupt {
			return "", &snapshot.HostileError{Source: "snapshot", What: path + " cannot be read as a database (SQLite finds it corrupt)"}
		}
		return "", fmt.Errorf("read the snapshot %s: %w", path, err)
	}
	if snapshot.IsRecord(path) {
		return kindUndo, nil
	}
	return kindFull, nil
}

// lockExclusive opens the database's lock descriptor (creating the file if
// it is missing) and takes the lock every server holds shared, so that no
// server runs during the restore and none starts.
func lockExclusive(db string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(db), 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(db, os.O_RDONLY|os.O_CREATE, 0o600)
	if err != nil {
		return nil, err
	}
	if err := osfile.LockExclusive(f); err != nil {
		f.Close()
		if errors.Is(err, osfile.ErrHeld) {
			return nil, &heldError{db: db}
		}
		return nil, err
	}
	return f, nil
}

// heldError is the refusal while a server holds the database's lock.
type heldError struct{ db, holders string }

func (e *heldError) Error() string {
	return fmt.Sprintf("a server is using %s (it holds the file's lock)%s; stop it (end the MCP host's session, or the mcp-sqlite-memory process serving this file) and run restore again. Nothing was changed (restore --dry-run works while it runs)", e.db, e.holders)
}

func (e *heldError) Is(target error) bool { return target == osfile.ErrHeld }

// holdersText names the processes that have the database open, for a
// refusal: " (open in mcp-sqlite-memory (pid 12))", or "".
func holdersText(hs []holder) string {
	if len(hs) == 0 {
		return ""
	}
	parts := make([]string, len(hs))
	for i, h := range hs {
		parts[i] = h.describe()
	}
	return ", open in " + strings.Join(parts, ", ")
}

// agentObjects restores the agent's objects in one transaction on a
// connection of the memory store, which also appends the restore event
// and writes its audit row: all of it commits, or none.
func agentObjects(ctx context.Context, o Options) (_ *Result, err error) {
	started := time.Now()
	if o.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Timeout)
		defer cancel()
	}
	defer func() { err = budgetErr(ctx, o, err) }()
	store, err := memory.Open(ctx, o.DB, o.Log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	conn, err := store.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	// Foreign keys off (SQLite's default, said here because it matters):
	// tables are dropped and filled in creation order, not in the order
	// their references would need.
	if _, err := conn.ExecContext(ctx, fmt.Sprintf("PRAGMA busy_timeout = %d; PRAGMA foreign_keys = OFF", o.BusyTimeout.Milliseconds())); err != nil {
		return nil, err
	}
	defer func() {
		_, _ = conn.ExecContext(context.Background(), fmt.Sprintf("PRAGMA busy_timeout = %d", memory.BusyTimeout.Milliseconds()))
	}()
	if _, err := conn.ExecContext(ctx, "ATTACH ? AS "+snapSchema, snapshotURI(o.Snapshot)); err != nil {
		return nil, fmt.Errorf("attach the snapshot %s: %w", o.Snapshot, err)
	}
	defer func() { _, _ = conn.ExecContext(context.Background(), "DETACH "+snapSchema) }()

	undoCap, err := capGrowth(ctx, conn, o)
	if err != nil {
		return nil, err
	}
	defer undoCap()

	tx, err := conn.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock
	if err != nil {
		return nil, busyOr(o.DB, o.BusyTimeout, err)
	}
	defer func() { _ = tx.Rollback() }()
	cur, err := readCatalog(ctx, tx, "main")
	if err != nil {
		return nil, busyOr(o.DB, o.BusyTimeout, err)
	}
	snap, err := readCatalog(ctx, tx, snapSchema)
	if err != nil {
		return nil, snapshotFault(err)
	}
	// The snapshot is untrusted: what it would create is checked first.
	if err := snapshot.CheckSnapshot(snapObjects(snap)); err != nil {
		return nil, err
	}
	plan, err := makePlan(ctx, tx, cur, snap, false)
	if err != nil {
		return nil, err
	}
	res := &Result{Plan: plan}
	fmt.Fprintf(o.Out, "restore of %s from %s: the agent's tables, indexes, views and triggers come back from the snapshot; the memory log, checkpoints and audit log stay as they are\n", o.DB, o.Snapshot)
	if o.DryRun {
		plan.write(o.Out)
		fmt.Fprintln(o.Out, "dry run: nothing was changed")
		return res, nil
	}
	// This transaction holds the write lock and has not written: another
	// connection reads exactly the state the restore replaces.
	if res.Safety, err = safetySnapshot(o); err != nil {
		return nil, err
	}
	fmt.Fprintf(o.Out, "safety snapshot of the current state: %s\n", res.Safety)
	plan.write(o.Out)
	if err := applyAgentObjects(ctx, tx, cur, snap); err != nil {
		return nil, fmt.Errorf("the restore failed and was rolled back, nothing was changed: %w", err)
	}
	if res.Event, err = record(ctx, store, tx, o, res, started); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, busyOr(o.DB, o.BusyTimeout, fmt.Errorf("commit: %w", err))
	}
	fmt.Fprintf(o.Out, "restored; memory event %d (kind %s) records it. To undo: mcp-sqlite-memory restore --db %s %s\n", res.Event.ID, EventKind, o.DB, res.Safety)
	return res, nil
}

// wholeFile copies the snapshot over the whole database through the backup
// API (o.Everything), then records the restore in the restored file.
func wholeFile(ctx context.Context, o Options, src *rawsqlite.Conn, fresh bool) (*Result, error) {
	started := time.Now()
	res := &Result{}
	var n int64
	_ = src.QueryRow("PRAGMA page_count", func(st *rawsqlite.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	})
	if n < 2 {
		// A one-page database is empty (kindOf refuses it); the copy
		// below relies on a first step that does not finish it.
		return nil, fmt.Errorf("%s holds no tables; there is nothing to restore from it", o.Snapshot)
	}
	fmt.Fprintf(o.Out, "restore of %s from %s, the whole file (--everything): the memory log, checkpoints and audit log become the snapshot's too\n", o.DB, o.Snapshot)
	if o.DryRun {
		plan, err := planWhole(ctx, o, fresh)
		if err != nil {
			return nil, err
		}
		res.Plan = plan
		plan.write(o.Out)
		fmt.Fprintln(o.Out, "dry run: nothing was changed")
		return res, nil
	}
	dst, err := rawsqlite.Open(o.DB, rawsqlite.ReadWrite)
	if err != nil {
		return nil, err
	}
	defer dst.Close()
	if err := dst.BusyTimeout(o.BusyTimeout); err != nil {
		return nil, err
	}
	// Ask for the write lock once with the short timeout, so that a busy
	// database is refused at once rather than after the backup's retries.
	if err := dst.Exec("BEGIN IMMEDIATE; ROLLBACK"); err != nil {
		return nil, busyOr(o.DB, o.BusyTimeout, err)
	}
	// prepare writes the plan and the safety snapshot of what the copy
	// replaces.
	prepare := func() error {
		var err error
		if res.Plan, err = planWhole(ctx, o, fresh); err != nil {
			return err
		}
		if !fresh {
			if res.Safety, err = safetySnapshot(o); err != nil {
				return err
			}
			fmt.Fprintf(o.Out, "safety snapshot of the current state: %s\n", res.Safety)
		}
		res.Plan.write(o.Out)
		return nil
	}
	// In WAL mode the copy's write lock leaves readers alone, so the plan
	// and the safety snapshot are taken while the copy holds it: no commit
	// can fall between them and the copy. In rollback-journal mode (a new
	// file, a file another program switched) that lock keeps readers out
	// too, so they are taken just before.
	var mode string
	_ = dst.QueryRow("PRAGMA journal_mode", func(st *rawsqlite.Stmt) error {
		mode = st.ColumnText(0)
		return nil
	})
	wal := strings.EqualFold(mode, "wal")
	if !wal {
		if err := prepare(); err != nil {
			return nil, err
		}
	}
	var prepErr error
	first := true
	err = src.BackupTo(dst, 1024, func(done, total int) bool {
		if !first || !wal {
			return true
		}
		first = false
		testHookLocked()
		// dst holds the write lock and nothing is committed: what another
		// connection reads now is exactly what the copy replaces.
		prepErr = prepare()
		return prepErr == nil
	})
	if prepErr != nil {
		return nil, prepErr
	}
	if err != nil {
		if rawsqlite.ErrorCode(err)&0xff == rawsqlite.ResultReadOnly {
			return nil, fmt.Errorf("SQLite cannot copy %s over %s (%v): in WAL mode both must have the same page size; nothing was changed", o.Snapshot, o.DB, err)
		}
		return nil, busyOr(o.DB, o.BusyTimeout, fmt.Errorf("copy the snapshot: %w", err))
	}
	if err := dst.Close(); err != nil {
		return nil, err
	}
	store, err := memory.Open(ctx, o.DB, o.Log)
	if err != nil {
		return nil, err
	}
	defer store.Close()
	tx, err := store.Begin(ctx)
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	if res.Event, err = record(ctx, store, tx, o, res, started); err != nil {
		return nil, err
	}
	if err := tx.Commit(); err != nil {
		return nil, fmt.Errorf("the snapshot was restored, but its memory event could not be written: %w", err)
	}
	undo := ""
	if res.Safety != "" {
		undo = fmt.Sprintf(" To undo: mcp-sqlite-memory restore --everything --db %s %s", o.DB, res.Safety)
	}
	fmt.Fprintf(o.Out, "restored the whole file; memory event %d (kind %s) records it.%s\n", res.Event.ID, EventKind, undo)
	return res, nil
}

// planWhole reads what a whole-file restore replaces and discards, through
// a read-only connection of its own with the snapshot attached.
func planWhole(ctx context.Context, o Options, fresh bool) (*Plan, error) {
	db, err := sql.Open("sqlite", rawsqlite.FileURI(o.DB, "mode=ro"))
	if err != nil {
		return nil, err
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "ATTACH ? AS "+snapSchema, snapshotURI(o.Snapshot)); err != nil {
		return nil, fmt.Errorf("attach the snapshot %s: %w", o.Snapshot, err)
	}
	defer func() { _, _ = conn.ExecContext(context.Background(), "DETACH "+snapSchema) }()
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	cur := &catalog{schema: "main", names: map[string]bool{}}
	if !fresh {
		if cur, err = readCatalog(ctx, tx, "main"); err != nil {
			return nil, err
		}
	}
	snap, err := readCatalog(ctx, tx, snapSchema)
	if err != nil {
		return nil, err
	}
	// The whole file becomes the snapshot's: its agent objects obey the
	// rules of any restore, and its server triggers and views must be the
	// server's own.
	if err := snapshot.CheckSnapshot(snapObjects(snap)); err != nil {
		return nil, err
	}
	if err := checkServerObjects(ctx, snap); err != nil {
		return nil, err
	}
	return makePlan(ctx, tx, cur, snap, true)
}

// safetySnapshot copies the database's current state into the snapshot
// folder as <stem>.<stamp>Z.pre-restore.db.
func safetySnapshot(o Options) (string, error) {
	c, err := rawsqlite.Open(o.DB, rawsqlite.ReadOnly)
	if err != nil {
		return "", err
	}
	defer c.Close()
	path, err := snapshot.FullCopy(c, o.SnapshotDir, stem(o.DB), snapshot.PreRestoreTag)
	if err != nil {
		return "", fmt.Errorf("could not write the safety snapshot of the current state into %s (%v), so nothing was restored; free space there or pass --snapshot-dir", o.SnapshotDir, err)
	}
	return path, nil
}

// record appends the restore event and its audit row inside tx.
func record(ctx context.Context, store *memory.Store, tx *sql.Tx, o Options, res *Result, started time.Time) (memory.Event, error) {
	what := "restored the agent's objects from " + o.Snapshot + " (the memory log, checkpoints and audit log were kept)"
	summary := res.Plan.summary()
	switch {
	case res.Undo != nil:
		what = "applied the undo record " + o.Snapshot + " of: " + snapshot.Printable(oneLine(res.Undo.Statement)) + " (the memory log, checkpoints and audit log were kept)"
		summary = undoSummary(res.Undo)
	case res.Plan.Everything:
		what = "restored the whole file from " + o.Snapshot + " (--everything)"
	}
	parts := []string{what}
	if r := strings.TrimSpace(o.Reason); r != "" {
		parts = append(parts, "reason: "+r)
	}
	if res.Safety != "" {
		parts = append(parts, "the state before is kept in "+res.Safety)
	}
	parts = append(parts, summary)
	session := memory.NewSession(started)
	ev, err := store.AppendTx(ctx, tx, session, EventKind, strings.Join(parts, "; "))
	if err != nil {
		return ev, err
	}
	detail := map[string]any{
		"snapshot":   o.Snapshot,
		"everything": res.Plan.Everything,
		"event_id":   ev.ID,
		"changes":    summary,
	}
	if res.Undo != nil {
		detail["kind"] = "undo"
		detail["force"] = o.Force
	}
	if o.Reason != "" {
		detail["reason"] = o.Reason
	}
	if res.Safety != "" {
		detail["safety_snapshot"] = res.Safety
	}
	err = audit.WriteTx(ctx, tx, audit.Entry{
		TS: started, Session: session, Tool: "restore",
		Query: sql.NullString{String: o.Snapshot, Valid: true}, OK: true,
		Duration: time.Since(started), Detail: detail,
	})
	return ev, err
}

// snapshotURI is how the restore's connection attaches the snapshot: read
// only, as an immutable file (see rawsqlite.OpenImmutable).
func snapshotURI(path string) string {
	if fi, err := os.Stat(path + "-wal"); err == nil && fi.Size() > 0 {
		return rawsqlite.FileURI(path, "mode=ro")
	}
	return rawsqlite.FileURI(path, "immutable=1")
}

// busyOr turns SQLite's "database is locked" into restore's refusal.
func busyOr(db string, waited time.Duration, err error) error {
	if c := sqliteCode(err); c == rawsqlite.ResultBusy || c == rawsqlite.ResultLocked {
		return fmt.Errorf("another program is writing to %s (SQLite still reported the database busy after %s): let it finish, or stop it, and run restore again. Nothing was changed", db, waited)
	}
	return err
}

// sqliteCode is the primary SQLite result code of err, from either
// binding.
func sqliteCode(err error) int {
	var se *sqlite.Error
	if errors.As(err, &se) {
		return se.Code() & 0xff
	}
	return rawsqlite.ErrorCode(err) & 0xff
}

// stem is the database file name without its extension, as snapshot names
// use it.
func stem(db string) string {
	base := filepath.Base(db)
	return strings.TrimSuffix(base, filepath.Ext(base))
}

// missingSnapshot says the snapshot is not there and lists the newest
// snapshots where it was looked for.
func missingSnapshot(o Options, err error) error {
	if !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("read the snapshot: %w", err)
	}
	dir := filepath.Dir(o.Snapshot)
	if _, err := os.Stat(dir); err != nil {
		dir = o.SnapshotDir
	}
	return fmt.Errorf("no snapshot at %s%s", o.Snapshot, newestHint(o, dir))
}
