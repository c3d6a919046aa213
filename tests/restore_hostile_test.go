package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Issue 29: undo records and snapshots are untrusted input to restore.
// Each test builds an honest snapshot through the server, changes it as a
// hostile program that can write the snapshot folder would, and checks
// that restore refuses it as the record's fault and changes nothing.

// serverState is every row of the server's tables and the index's
// document sizes, for before/after comparisons.
func serverState(t *testing.T, db string) string {
	t.Helper()
	return queryText(t, db, "SELECT 'events', count(*), group_concat(hash) FROM memory_events") +
		queryText(t, db, "SELECT 'checkpoints', count(*), group_concat(head_hash) FROM memory_checkpoints") +
		queryText(t, db, "SELECT 'audit', count(*), max(id) FROM query_log") +
		queryText(t, db, "SELECT 'docsize', count(*) FROM memory_events_fts_docsize") +
		queryText(t, db, "SELECT 'schema', group_concat(type || ' ' || name, ', ') FROM (SELECT type, name FROM sqlite_schema ORDER BY name)")
}

// hostileSession writes notes and memory, then runs stmt through
// destructive_query with --snapshot-mode undo and returns the record.
func hostileSession(t *testing.T, db, stmt string, extra ...string) string {
	t.Helper()
	s := start(t, db, "--snapshot-mode", "undo", "--standby-workers", "1")
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('a'), ('b'), ('c')"))
	for _, e := range extra {
		s.ok("write_query", q(e))
	}
	for _, c := range []string{"one", "two", "three", "four"} {
		s.ok("append_event", map[string]any{"content": c})
	}
	s.ok("checkpoint", map[string]any{"summary": "four events"})
	rec, _ := destroy(t, s, stmt)
	s.ok("append_event", map[string]any{"content": "five"})
	s.audited(db)
	s.c.Close()
	return rec
}

// mutateFile runs sqlText on the record or snapshot file, as any program
// that can write the snapshot folder can.
func mutateFile(t *testing.T, path, sqlText string) {
	t.Helper()
	c, err := rawsqlite.Open(path, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Exec(sqlText); err != nil {
		t.Fatalf("change %s: %v", filepath.Base(path), err)
	}
}

// refused runs restore, which must fail blaming the file, and checks
// that the server's tables and the agent's notes are as before.
func refused(t *testing.T, db, snap, want string, args ...string) string {
	t.Helper()
	before := serverState(t, db)
	agent := agentDigest(t, db)
	out, code := restoreRun(t, append(append([]string{"--db", db}, args...), snap)...)
	if code == 0 || !strings.Contains(out, "is malformed or hostile: ") || !strings.Contains(out, "your database was not changed") || !strings.Contains(out, want) {
		t.Fatalf("restore of a hostile file: exit %d, want a refusal naming %q:\n%s", code, want, out)
	}
	if strings.Contains(out, "database disk image is malformed") {
		t.Errorf("the refusal blames the database:\n%s", out)
	}
	if got := serverState(t, db); got != before {
		t.Fatalf("a refused restore changed the server's tables:\n%s\nwant:\n%s", got, before)
	}
	if agentDigest(t, db) != agent {
		t.Fatal("a refused restore changed the agent's tables")
	}
	if code, vout := verifyExit(t, db); code != 0 {
		t.Fatalf("verify after a refused restore: exit %d %s", code, vout)
	}
	return out
}

// TestRestoreRefusesRecordSQL is the reproduction (item 1): a
// create row whose SQL deletes memory rows after creating its table.
func TestRestoreRefusesRecordSQL(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rec := hostileSession(t, db, "DROP TABLE notes")
	mutateFile(t, rec, `UPDATE undo_schema SET sql = 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT); DELETE FROM memory_events WHERE id>3; DELETE FROM query_log WHERE 1; DELETE FROM memory_checkpoints WHERE 1' WHERE action = 'create'`)
	refused(t, db, rec, "holds more than one statement")
	// --dry-run runs the same checks.
	refused(t, db, rec, "holds more than one statement", "--dry-run")
}

// TestRestoreRefusesTriggerOnMemory is item 2: a trigger on memory_events
// that drops appends, declared under table notes; after the refusal an
// append is stored.
func TestRestoreRefusesTriggerOnMemory(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rec := hostileSession(t, db, "DROP TABLE notes")
	mutateFile(t, rec, `INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('create', 'trigger', 'notes_keep', 'notes',
		'CREATE TRIGGER notes_keep BEFORE INSERT ON memory_events WHEN new.content LIKE ''%secret%'' BEGIN SELECT RAISE(IGNORE); END')`)
	refused(t, db, rec, "memory_events")

	// A trigger on notes whose body rewrites the memory.
	mutateFile(t, rec, `UPDATE undo_schema SET sql = 'CREATE TRIGGER notes_keep AFTER INSERT ON notes BEGIN INSERT OR REPLACE INTO memory_events(id, ts, session, kind, content, prev_hash, hash) SELECT id, ts, session, kind, ''rewritten'', prev_hash, hash FROM memory_events; END' WHERE name = 'notes_keep'`)
	refused(t, db, rec, "reaches memory_events, which belongs to the server or to SQLite (in trigger or view notes_keep)")

	s := start(t, db)
	s.ok("append_event", map[string]any{"content": "a secret"})
	if got := queryText(t, db, "SELECT count(*) FROM memory_events WHERE content = 'a secret'"); got != "1\n" {
		t.Fatalf("the append was not stored: %s", got)
	}
	s.c.Close()
}

// TestRestoreRefusesShadowChangeset is item 3: a changeset deleting a row
// of the index's shadow table memory_events_fts_docsize.
func TestRestoreRefusesShadowChangeset(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rec := hostileSession(t, db, "DELETE FROM notes WHERE id = 1")
	scratch, err := rawsqlite.Open(filepath.Join(testDir(t), "scratch.db"), rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	defer scratch.Close()
	if err := scratch.Exec("CREATE TABLE memory_events_fts_docsize(id INTEGER PRIMARY KEY, sz BLOB); INSERT INTO memory_events_fts_docsize SELECT * FROM (VALUES (1, NULL))"); err != nil {
		t.Fatal(err)
	}
	sz := queryText(t, db, "SELECT hex(sz) FROM memory_events_fts_docsize WHERE id = 1")
	if err := scratch.Exec("UPDATE memory_events_fts_docsize SET sz = x'" + strings.TrimSpace(sz) + "'"); err != nil {
		t.Fatal(err)
	}
	sess, err := scratch.NewSession(func(string) bool { return true })
	if err != nil {
		t.Fatal(err)
	}
	if err := scratch.Exec("DELETE FROM memory_events_fts_docsize"); err != nil {
		t.Fatal(err)
	}
	cs, err := sess.Changeset()
	sess.Delete()
	if err != nil || len(cs) == 0 {
		t.Fatalf("changeset: %v", err)
	}
	c, err := rawsqlite.Open(rec, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := c.Prepare("UPDATE undo_changeset SET data = ?1")
	if err == nil {
		err = st.BindBlob(1, cs)
	}
	if err == nil {
		_, err = st.Step()
		st.Finalize()
	}
	c.Close()
	if err != nil {
		t.Fatal(err)
	}
	refused(t, db, rec, "memory_events_fts_docsize")
	s := start(t, db)
	if text := s.ok("get_resume_context", map[string]any{"query": "three"}); strings.Contains(text, "malformed") {
		t.Fatalf("recall after the refusal:\n%s", text)
	}
	s.c.Close()
}

// TestRestoreRefusesHostileSnapshot: a full snapshot (the snapshot tool's)
// given a trigger on notes whose body writes memory_events, and a view
// over the audit log; restore of the agent's objects refuses both.
func TestRestoreRefusesHostileSnapshot(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db)
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('a'), ('b')"))
	s.ok("append_event", map[string]any{"content": "one"})
	text := s.ok("snapshot", map[string]any{"reason": "e2e"})
	snap := strings.TrimSpace(strings.TrimPrefix(text, "ok: snapshot written: "))
	s.audited(db)
	s.c.Close()

	mutateFile(t, snap, `CREATE TRIGGER notes_ai AFTER INSERT ON notes BEGIN INSERT OR REPLACE INTO memory_events(id, ts, session, kind, content, prev_hash, hash) SELECT id, ts, session, kind, 'rewritten', prev_hash, hash FROM memory_events; END`)
	out := refused(t, db, snap, "memory_events")
	if !strings.Contains(out, "the snapshot is malformed or hostile") {
		t.Errorf("the refusal does not name the snapshot:\n%s", out)
	}
	// The whole file (--everything): a trigger on memory_events that
	// drops appends, and a server trigger given another body.
	mutateFile(t, snap, `DROP TRIGGER notes_ai; CREATE TRIGGER notes_keep BEFORE INSERT ON memory_events WHEN new.content LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`)
	refused(t, db, snap, "trigger notes_keep on memory_events is not one the server creates", "--everything")
	mutateFile(t, snap, `DROP TRIGGER notes_keep; DROP TRIGGER memory_events_no_delete; CREATE TRIGGER memory_events_no_delete BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END`)
	refused(t, db, snap, "trigger memory_events_no_delete on memory_events is not one the server creates", "--everything")
	mutateFile(t, snap, `DROP TRIGGER memory_events_no_delete; CREATE TRIGGER memory_events_no_delete BEFORE DELETE ON memory_events
    BEGIN SELECT RAISE(ABORT, 'memory_events is append-only'); END`)
	if out := restoreOK(t, "--db", db, "--everything", "--dry-run", snap); !strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("dry run of the snapshot with the server's own trigger back:\n%s", out)
	}
	mutateFile(t, snap, `CREATE TABLE evil AS SELECT 1 AS x; CREATE INDEX evil_x ON evil(x)`)
	// An honest object of the snapshot still restores.
	if out := restoreOK(t, "--db", db, snap); !strings.Contains(out, "evil") {
		t.Fatalf("restore of the snapshot with an honest table:\n%s", out)
	}
}

// TestRestoreEndlessRecord is item 7: a record whose row copy reads from
// an endless recursive view stops at once with a clear error; an honest
// record over the time budget is rolled back and says how to go on.
func TestRestoreEndlessRecord(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rec := hostileSession(t, db, "DROP TABLE notes", "WITH RECURSIVE n(i) AS (SELECT 4 UNION ALL SELECT i + 1 FROM n WHERE i < 60000) INSERT INTO notes SELECT i, hex(randomblob(40)) FROM n")
	endless := filepath.Join(filepath.Dir(rec), "endless.undo.db")
	if err := copyFile(rec, endless); err != nil {
		t.Fatal(err)
	}
	mutateFile(t, endless, `DROP TABLE undo_copy_1; CREATE VIEW undo_copy_1 AS WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i AS rowid, i AS id, zeroblob(10000) AS body FROM n`)
	started := time.Now()
	refused(t, db, endless, "undo_copy_1")
	if fi, err := os.Stat(db + "-wal"); err == nil && fi.Size() > 64<<20 {
		t.Fatalf("the WAL grew to %d bytes", fi.Size())
	}
	t.Logf("refused in %s", time.Since(started))

	out, code := restoreRun(t, "--db", db, "--restore-timeout", "0.001", rec)
	if code == 0 || !strings.Contains(out, "time budget") || !strings.Contains(out, "--restore-timeout") || !strings.Contains(out, "your database was not changed") {
		t.Fatalf("restore over its time budget: exit %d\n%s", code, out)
	}
	if got := queryText(t, db, "SELECT count(*) FROM sqlite_schema WHERE name = 'notes'"); got != "0\n" {
		t.Fatalf("a restore over its budget left notes: %s", got)
	}
	restoreOK(t, "--db", db, rec)
	if got := queryText(t, db, "SELECT count(*) FROM notes"); got != "60000\n" {
		t.Fatalf("notes after the honest restore: %s", got)
	}
}

// TestRestoreEscapesRecordText is item 9: the record's texts are printed
// with control, bidi and zero-width characters escaped, and a changeset
// of noise is the record's fault, not the database's.
func TestRestoreEscapesRecordText(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	rec := hostileSession(t, db, "DELETE FROM notes WHERE id = 1")
	noise := filepath.Join(filepath.Dir(rec), "noise.undo.db")
	if err := copyFile(rec, noise); err != nil {
		t.Fatal(err)
	}
	mutateFile(t, rec, "UPDATE undo_info SET statement = 'DELETE'||char(13)||char(10)||'ok: restored, nothing else to do'||char(27)||'[2J', tables = 'notes'||char(8238)||'txt.exe'||char(8203)")
	out := restoreOK(t, "--db", db, "--dry-run", rec)
	for _, raw := range []string{"\r", "\x1b", "\u202e", "\u200b", "\nok: restored"} {
		if strings.Contains(out, raw) {
			t.Errorf("restore printed %q raw:\n%q", raw, out)
		}
	}
	// The statement is shown on one line: its line breaks become spaces.
	if !strings.Contains(out, `DELETE ok: restored, nothing else to do\x1b[2J`) || !strings.Contains(out, `notes\u{202e}txt.exe\u{200b}`) {
		t.Errorf("restore did not escape the record's texts:\n%s", out)
	}
	mutateFile(t, noise, "UPDATE undo_changeset SET data = x'540102030405060708'")
	refused(t, db, noise, "changeset")
}

// TestRestoreListsAndProposesOnlyAuditedSnapshots is issue 29 item 5 and
// issue 31 item 6: a missing snapshot (or none) lists the snapshots newest
// first with their kind, size and the call that wrote them (from the audit
// log); the "Try:" line never proposes a file the server did not write,
// such as one planted with a name dated in the future. A dry run works
// while the server runs; the real restore's refusal names the process.
func TestRestoreListsAndProposesOnlyAuditedSnapshots(t *testing.T) {
	t.Parallel()
	db := newDB(t)
	s := start(t, db, "--snapshot-mode", "undo", "--standby-workers", "1")
	s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
	s.ok("write_query", q("INSERT INTO notes(body) VALUES ('a'), ('b'), ('c')"))
	rec, _ := destroy(t, s, "DELETE FROM notes WHERE id > 2")
	text := s.ok("snapshot", map[string]any{"reason": "before the refactor"})
	full := strings.TrimSpace(strings.TrimPrefix(text, "ok: snapshot written: "))
	s.audited(db)

	// While the server runs: a dry run works, a restore names the process.
	if out := restoreOK(t, "--db", db, "--dry-run", rec); !strings.Contains(out, "this dry run changes nothing") || !strings.Contains(out, "would put back: 1 rows") {
		t.Fatalf("dry run beside the server:\n%s", out)
	}
	if out := restoreOK(t, "--db", db, "--dry-run", full); !strings.Contains(out, "this dry run changes nothing") || !strings.Contains(out, "notes: 2 -> 2, replaced") {
		t.Fatalf("dry run of a full snapshot beside the server:\n%s", out)
	}
	s.ok("append_event", map[string]any{"content": "the server still serves"})
	out, err := exec.Command(serverBin, "restore", "--db", db, rec).CombinedOutput()
	// Windows cannot name the holder (restore/holders_other.go: its locks
	// belong to a handle and are seen only by taking them).
	namesHolder := runtime.GOOS == "windows" || strings.Contains(string(out), "mcp-sqlite-memo (pid ")
	if exitCode(err) != 1 || !strings.Contains(string(out), "a server is using "+db) || !namesHolder || !strings.Contains(string(out), "--dry-run works") {
		t.Fatalf("restore beside the server: exit %d\n%s", exitCode(err), out)
	}
	s.c.Close()

	dir := filepath.Dir(full)
	planted := filepath.Join(dir, "memory.20991231T235959.999Z.db")
	unaudited := filepath.Join(dir, "memory.20200101T000000.000Z.db")
	for _, p := range []string{planted, unaudited} {
		if err := copyFile(full, p); err != nil {
			t.Fatal(err)
		}
	}
	outText, code := restoreRun(t, "--db", db, filepath.Join(dir, "memory.20210101T000000.000Z.db"))
	wantTry := "Try: mcp-sqlite-memory restore --db " + db + " " + full
	for _, want := range []string{
		"no snapshot at",
		"  " + filepath.Base(full) + "  full copy, ",
		", by snapshot (reason: before the refactor)",
		"  " + filepath.Base(rec) + "  undo record, ",
		", by destructive_query: DELETE FROM notes WHERE id > 2 (reason: e2e)",
		"  " + filepath.Base(planted) + "  full copy, ",
		"not proposed: no audit row of the database names it, so the server did not write it; its name is dated in the future",
		wantTry,
	} {
		if code != 1 || !strings.Contains(outText, want) {
			t.Errorf("restore of a missing snapshot: exit %d, lacks %q:\n%s", code, want, outText)
		}
	}
	if strings.Index(outText, filepath.Base(full)) > strings.Index(outText, filepath.Base(rec)) {
		t.Errorf("not newest first:\n%s", outText)
	}
	outText, code = restoreRun(t, "--db", db)
	if code != 2 || !strings.Contains(outText, filepath.Base(rec)+"  undo record") || !strings.Contains(outText, wantTry) {
		t.Errorf("restore with no snapshot: exit %d\n%s", code, outText)
	}
}
