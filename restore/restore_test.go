package restore

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/audit"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite/sqlitetest"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// agentSchema is one of every kind of agent object restore must bring
// back: rowid and WITHOUT ROWID tables, AUTOINCREMENT, a generated column,
// an index, a view, a trigger, an external-content FTS5 index and an
// R*Tree.
const agentSchema = `
CREATE TABLE notes (id INTEGER PRIMARY KEY AUTOINCREMENT, body TEXT, len INTEGER GENERATED ALWAYS AS (length(body)));
CREATE TABLE tags (tag TEXT PRIMARY KEY, n INTEGER) WITHOUT ROWID;
CREATE TABLE plain (a);
CREATE TABLE child (id INTEGER PRIMARY KEY, note INTEGER REFERENCES notes(id) ON DELETE CASCADE);
CREATE INDEX notes_body ON notes(body);
CREATE VIEW long_notes AS SELECT id, body FROM notes WHERE len > 3;
CREATE TABLE log (what);
CREATE TRIGGER notes_log AFTER INSERT ON notes BEGIN INSERT INTO log VALUES (new.body); END;
CREATE VIRTUAL TABLE notes_fts USING fts5(body, content='notes', content_rowid='id');
CREATE VIRTUAL TABLE boxes USING rtree(id, x0, x1);
INSERT INTO notes(body) VALUES ('alpha'), ('beta'), ('gamma delta'), ('zz');
DELETE FROM notes WHERE body = 'zz';
INSERT INTO tags VALUES ('a', 1), ('b', 2);
INSERT INTO child(note) VALUES (2), (3);
INSERT INTO plain(rowid, a) VALUES (10, 'ten'), (20, 'twenty');
INSERT INTO notes_fts(notes_fts) VALUES ('rebuild');
INSERT INTO boxes VALUES (1, 0, 1), (2, 5, 9);
ANALYZE;
`

// setup makes a memory database with agentSchema, an event and a
// checkpoint, and a snapshot of it; then it changes the agent's objects
// and appends more memory, as a session after the snapshot would.
func setup(t *testing.T) (db, snap string, store *memory.Store) {
	t.Helper()
	return setupWith(t, agentSchema)
}

// setupWith is setup with schema as the agent's objects and rows.
func setupWith(t *testing.T, schema string) (db, snap string, store *memory.Store) {
	t.Helper()
	ctx := context.Background()
	db = filepath.Join(t.TempDir(), "memory.db")
	store, err := memory.Open(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	sqlitetest.ExecFile(t, db, schema)
	if _, err := store.Append(ctx, "s", "note", "before the snapshot"); err != nil {
		t.Fatal(err)
	}
	c, err := rawsqlite.Open(db, rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	snap, err = snapshot.FullCopy(c, filepath.Join(filepath.Dir(db), "memory.snapshots"), "memory", "")
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	// The audit row the server writes for a snapshot it took.
	queue := audit.ForStore(store)
	if err := queue.Audit(ctx, audit.Entry{TS: time.Now(), Session: "s", Tool: "snapshot", OK: true, Detail: map[string]any{"snapshot": snap, "reason": "before the change"}}); err != nil {
		t.Fatal(err)
	}
	if err := queue.FlushAudit(ctx); err != nil {
		t.Fatal(err)
	}
	sqlitetest.ExecFile(t, db, `DELETE FROM notes WHERE id = 1; DROP TABLE tags; DROP VIEW long_notes; CREATE TABLE later (x);
		INSERT INTO later VALUES (1); INSERT INTO notes(body) VALUES ('after'); INSERT INTO notes_fts(notes_fts) VALUES ('rebuild');
		DELETE FROM boxes WHERE id = 2; DELETE FROM plain`)
	if _, err := store.Append(ctx, "s", "note", "after the snapshot"); err != nil {
		t.Fatal(err)
	}
	if _, err := store.Checkpoint(ctx, "s", "after the snapshot"); err != nil {
		t.Fatal(err)
	}
	return db, snap, store
}

// query returns the rows of one statement as text, one line per row.
func query(t *testing.T, db, q string) string {
	t.Helper()
	rows, err := sqlitetest.FileRows(db, q)
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return sqlitetest.Text(rows)
}

// agentState is every agent row and definition restore must bring back.
var agentState = []string{
	"SELECT id, body, len FROM notes ORDER BY id",
	"SELECT * FROM tags",
	"SELECT * FROM child",
	"SELECT rowid, a FROM plain ORDER BY rowid",
	"SELECT * FROM long_notes",
	"SELECT rowid FROM notes_fts WHERE notes_fts MATCH 'delta'",
	"SELECT * FROM boxes ORDER BY id",
	"SELECT name, seq FROM sqlite_sequence",
	"SELECT tbl, idx, stat FROM sqlite_stat1 WHERE tbl NOT IN ('memory_events', 'memory_checkpoints', 'query_log') ORDER BY tbl, idx",
	"SELECT type, name, tbl_name, sql FROM sqlite_schema WHERE name NOT LIKE 'memory%' AND name NOT LIKE 'query%' ORDER BY name",
}

func state(t *testing.T, db string) string {
	var b strings.Builder
	for _, q := range agentState {
		b.WriteString(q + "\n" + query(t, db, q))
	}
	return b.String()
}

func TestRestoreAgentObjects(t *testing.T) {
	ctx := context.Background()
	db, snap, store := setup(t)
	want := state(t, snap)
	before := state(t, db)
	if want == before {
		t.Fatal("the setup changed nothing after the snapshot")
	}
	store.Close()

	var out bytes.Buffer
	res, err := Run(ctx, Options{DB: db, Snapshot: snap, Reason: "undo the cleanup", Out: &out})
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out.String())
	}
	t.Log(out.String())
	if got := state(t, db); got != want {
		t.Errorf("agent state after the restore:\n%s\nwant the snapshot's:\n%s", got, want)
	}
	if got, want := query(t, db, "SELECT count(*) FROM log"), query(t, snap, "SELECT count(*) FROM log"); got != want {
		t.Errorf("the trigger fired while rows were copied: log has %s rows, want the snapshot's %s", got, want)
	}
	for _, check := range []string{"PRAGMA integrity_check", "INSERT INTO notes_fts(notes_fts) VALUES ('integrity-check')"} {
		sqlitetest.ExecFile(t, db, check)
	}
	if got := query(t, db, "PRAGMA integrity_check"); got != "ok\n" {
		t.Errorf("integrity_check: %s", got)
	}

	// The chain grew: both events, the checkpoint and the restore event.
	if got := query(t, db, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1|note\n2|note\n3|restore\n" {
		t.Errorf("events after the restore:\n%s", got)
	}
	if got := query(t, db, "SELECT count(*) FROM memory_checkpoints"); got != "1\n" {
		t.Errorf("checkpoints after the restore: %s", got)
	}
	content := query(t, db, "SELECT content FROM memory_events WHERE id = 3")
	for _, part := range []string{snap, "reason: undo the cleanup", res.Safety, "tables replaced: notes", "removed: table later", "view long_notes"} {
		if !strings.Contains(content, part) {
			t.Errorf("the restore event lacks %q:\n%s", part, content)
		}
	}
	if got := query(t, db, "SELECT tool, ok, query, json_extract(detail, '$.safety_snapshot'), json_extract(detail, '$.event_id') FROM query_log ORDER BY id DESC LIMIT 1"); got != "restore|1|"+snap+"|"+res.Safety+"|3\n" {
		t.Errorf("audit row: %s", got)
	}
	s2, err := memory.OpenExisting(ctx, db, nil)
	if err != nil {
		t.Fatal(err)
	}
	v, err := s2.Verify(ctx)
	s2.Close()
	if err != nil || !v.OK || v.Events != 3 {
		t.Fatalf("verify: %+v %v", v, err)
	}
	for _, line := range []string{"notes: 3 -> 3, replaced", "tags: not there now -> 2, added", "later: 1 -> not in the snapshot, removed", "objects added: view long_notes", "kept as they are (the server's): memory_events 2 rows, memory_checkpoints 1 row"} {
		if !strings.Contains(out.String(), line) {
			t.Errorf("the plan lacks %q:\n%s", line, out.String())
		}
	}

	// The safety snapshot is a snapshot by name and holds the state the
	// restore replaced: restoring it brings that back.
	if !snapshot.IsName(filepath.Base(res.Safety), "memory") || !strings.HasSuffix(res.Safety, "Z.pre-restore.db") {
		t.Fatalf("safety snapshot name %s", res.Safety)
	}
	if _, err := Run(ctx, Options{DB: db, Snapshot: res.Safety}); err != nil {
		t.Fatal(err)
	}
	if got := state(t, db); got != before {
		t.Errorf("after restoring the safety snapshot:\n%s\nwant the state before the first restore:\n%s", got, before)
	}
	if got := query(t, db, "SELECT count(*) FROM memory_events WHERE kind = 'restore'"); got != "2\n" {
		t.Errorf("restore events: %s", got)
	}
}

func TestRestoreEverything(t *testing.T) {
	ctx := context.Background()
	db, snap, store := setup(t)
	want := state(t, snap)
	store.Close()
	var out bytes.Buffer
	res, err := Run(ctx, Options{DB: db, Snapshot: snap, Everything: true, Out: &out})
	if err != nil {
		t.Fatalf("restore: %v\n%s", err, out.String())
	}
	if got := state(t, db); got != want {
		t.Errorf("after --everything:\n%s\nwant:\n%s", got, want)
	}
	if !strings.Contains(out.String(), "memory rows discarded (newer than the snapshot): memory_events ids 2-2 (1 row), memory_checkpoints ids 1-1 (1 row)") {
		t.Errorf("the plan does not say what it discards:\n%s", out.String())
	}
	if got := query(t, db, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1|note\n2|restore\n" {
		t.Errorf("events: %s", got)
	}
	if got := query(t, db, "SELECT content FROM memory_events WHERE id = 2"); !strings.Contains(got, "memory_events ids 2-2") || !strings.Contains(got, res.Safety) {
		t.Errorf("the restore event does not say what was discarded: %s", got)
	}
	if got := query(t, db, "SELECT count(*) FROM memory_events WHERE content = 'after the snapshot'"); got != "0\n" {
		t.Errorf("event after the snapshot kept: %s", got)
	}
	if got := query(t, res.Safety, "SELECT count(*) FROM memory_events WHERE content = 'after the snapshot'"); got != "1\n" {
		t.Errorf("the safety snapshot lacks the discarded event: %s", got)
	}
}

// TestEverythingHoldsTheWriteLock: while the plan and the safety snapshot
// are made, the copy holds the write lock, so no one can commit a row that
// neither the safety snapshot holds nor the copy keeps.
func TestEverythingHoldsTheWriteLock(t *testing.T) {
	db, snap, store := setup(t)
	store.Close()
	var lockedOut error
	testHookLocked = func() {
		c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
		if err != nil {
			lockedOut = err
			return
		}
		defer c.Close()
		lockedOut = c.Exec("BEGIN IMMEDIATE; ROLLBACK")
	}
	defer func() { testHookLocked = func() {} }()
	if _, err := Run(context.Background(), Options{DB: db, Snapshot: snap, Everything: true}); err != nil {
		t.Fatal(err)
	}
	if sqliteCode(lockedOut) != rawsqlite.ResultBusy {
		t.Fatalf("another writer during the copy: %v, want SQLITE_BUSY", lockedOut)
	}
}

func TestRestoreRefusals(t *testing.T) {
	db, snap, store := setup(t)
	store.Close()
	dir := filepath.Dir(snap)
	notDB := filepath.Join(dir, "notes.txt")
	empty := filepath.Join(t.TempDir(), "empty.db")
	if err := os.WriteFile(notDB, []byte("not a database, just text long enough to have a header of sorts"), 0o644); err != nil {
		t.Fatal(err)
	}
	sqlitetest.ExecFile(t, empty, "PRAGMA user_version = 1")
	unchanged := state(t, db)
	tests := []struct {
		name, snapshot string
		want           []string
	}{
		{"missing snapshot lists the newest", filepath.Join(dir, "memory.20200101T000000.000Z.db"), []string{"no snapshot at", "the newest in " + dir + " are:\n  " + filepath.Base(snap) + "  full copy, ", ", by snapshot (reason: before the change)", "Try: mcp-sqlite-memory restore --db " + db + " " + snap}},
		{"not a database", notDB, []string{"is not a SQLite database"}},
		{"empty database", empty, []string{"is an empty database"}},
		{"the database itself", db, []string{"is the database itself"}},
		{"a folder", dir, []string{"is a folder", filepath.Base(snap)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Run(context.Background(), Options{DB: db, Snapshot: tt.snapshot})
			if err == nil {
				t.Fatal("restore went ahead")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if got := state(t, db); got != unchanged {
				t.Error("a refused restore changed the database")
			}
		})
	}
}

func TestBusyOr(t *testing.T) {
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"busy", &rawsqlite.Error{Code: rawsqlite.ResultBusy, Msg: "database is locked"}, "another program is writing to /m.db (SQLite still reported the database busy after 1s): let it finish, or stop it, and run restore again. Nothing was changed"},
		{"locked", &rawsqlite.Error{Code: rawsqlite.ResultLocked, Msg: "database table is locked"}, "another program is writing to /m.db"},
		{"other", &rawsqlite.Error{Code: rawsqlite.ResultCorrupt, Msg: "database disk image is malformed"}, "database disk image is malformed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := busyOr("/m.db", DefaultBusyTimeout, tt.err).Error(); !strings.HasPrefix(got, tt.want) {
				t.Fatalf("%q, want %q", got, tt.want)
			}
		})
	}
}

// TestRestoreIntoMissingFile: a database that is not there gets the whole
// snapshot, and the restore is recorded in it.
func TestRestoreIntoMissingFile(t *testing.T) {
	_, snap, store := setup(t)
	store.Close()
	db := filepath.Join(t.TempDir(), "new", "memory.db")
	var out bytes.Buffer
	res, err := Run(context.Background(), Options{DB: db, Snapshot: snap, Out: &out})
	if err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "does not exist: the whole snapshot is restored into a new file") || res.Safety != "" {
		t.Errorf("output (safety %q):\n%s", res.Safety, out.String())
	}
	if got, want := state(t, db), state(t, snap); got != want {
		t.Errorf("new file:\n%s\nwant the snapshot's:\n%s", got, want)
	}
	if got := query(t, db, "SELECT id, kind FROM memory_events ORDER BY id"); got != "1|note\n2|restore\n" {
		t.Errorf("events: %s", got)
	}
}

// TestRestoreRefusesHostileSnapshots: a full snapshot whose agent objects
// reach the server's is refused as the snapshot's fault, in a dry run
// too, and a restore over its time budget is rolled back; neither changes
// the database.
func TestRestoreRefusesHostileSnapshots(t *testing.T) {
	db, snap, store := setup(t)
	store.Close()
	unchanged := state(t, db)
	events := query(t, db, "SELECT count(*), group_concat(hash) FROM memory_events")
	sqlitetest.ExecFile(t, snap, "CREATE TRIGGER notes_rewrite AFTER UPDATE ON notes BEGIN UPDATE memory_events SET content = 'x'; END")
	for _, dry := range []bool{true, false} {
		_, err := Run(context.Background(), Options{DB: db, Snapshot: snap, DryRun: dry})
		var h *snapshot.HostileError
		if !errors.As(err, &h) || !strings.Contains(err.Error(), "the snapshot is malformed or hostile: the triggers on notes: it reaches memory_events, which belongs to the server or to SQLite (in trigger or view notes_rewrite)") {
			t.Fatalf("dry run %v: %v", dry, err)
		}
	}
	sqlitetest.ExecFile(t, snap, "DROP TRIGGER notes_rewrite")
	_, err := Run(context.Background(), Options{DB: db, Snapshot: snap, Timeout: time.Nanosecond})
	var be *snapshot.BudgetError
	if !errors.As(err, &be) || !strings.Contains(err.Error(), "time budget") {
		t.Fatalf("restore with a 1 ns budget: %v", err)
	}
	if state(t, db) != unchanged || query(t, db, "SELECT count(*), group_concat(hash) FROM memory_events") != events {
		t.Fatal("a refused restore changed the database")
	}
}

// TestWithDefaults: Run's defaults, as named steps: 0 asks for the
// default bound, a negative one for none, and the paths become absolute
// with the snapshot folder beside the database.
func TestWithDefaults(t *testing.T) {
	dir := t.TempDir()
	for _, tt := range []struct {
		name      string
		in        Options
		busy      time.Duration
		timeout   time.Duration
		growth    int64
		snapshots string
	}{
		{name: "all left out", in: Options{DB: filepath.Join(dir, "m.db"), Snapshot: "s.db"},
			busy: DefaultBusyTimeout, timeout: DefaultTimeout, growth: DefaultMaxGrowth, snapshots: filepath.Join(dir, "m.snapshots")},
		{name: "negative bounds are none", in: Options{DB: filepath.Join(dir, "m.db"), Snapshot: "s.db", BusyTimeout: -1, Timeout: -1, MaxGrowth: -1},
			busy: DefaultBusyTimeout, snapshots: filepath.Join(dir, "m.snapshots")},
		{name: "given values kept", in: Options{DB: filepath.Join(dir, "m.db"), Snapshot: "s.db", SnapshotDir: filepath.Join(dir, "snaps"), BusyTimeout: 3 * time.Second, Timeout: time.Minute, MaxGrowth: 7},
			busy: 3 * time.Second, timeout: time.Minute, growth: 7, snapshots: filepath.Join(dir, "snaps")},
		{name: "relative paths", in: Options{DB: "rel/m.db", Snapshot: "s.db", SnapshotDir: "snaps"},
			busy: DefaultBusyTimeout, timeout: DefaultTimeout, growth: DefaultMaxGrowth, snapshots: "snaps"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := tt.in.withDefaults()
			if err != nil {
				t.Fatal(err)
			}
			if o.Out == nil || o.Log == nil {
				t.Error("Out or Log left nil")
			}
			if o.BusyTimeout != tt.busy || o.Timeout != tt.timeout || o.MaxGrowth != tt.growth {
				t.Errorf("busy %s timeout %s growth %d, want %s %s %d", o.BusyTimeout, o.Timeout, o.MaxGrowth, tt.busy, tt.timeout, tt.growth)
			}
			want, _ := filepath.Abs(tt.snapshots)
			if o.SnapshotDir != want {
				t.Errorf("snapshot folder %s, want %s", o.SnapshotDir, want)
			}
			for _, p := range []string{o.DB, o.Snapshot, o.SnapshotDir} {
				if !filepath.IsAbs(p) {
					t.Errorf("%s is not absolute", p)
				}
			}
		})
	}
}
