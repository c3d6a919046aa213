package memory

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestAppendChecksItsRow: a trigger another program installs while the
// server runs cannot make an append or checkpoint claim a row it did not
// store (issue 29 item 2, SPEC 5.6).
func TestAppendChecksItsRow(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, ddl  string
		checkpoint bool
	}{
		{"event dropped by RAISE(IGNORE)", `CREATE TRIGGER drop_secret BEFORE INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`, false},
		{"extra event added by a trigger", `CREATE TRIGGER twin AFTER INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN
			INSERT INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (NEW.id + 1, NEW.ts, NEW.session, NEW.kind, 'evil', NEW.hash, 'x' || NEW.hash); END`, false},
		{"event rewritten by a trigger", `DROP TRIGGER memory_events_no_update; CREATE TRIGGER rewrite AFTER INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN
			UPDATE memory_events SET content = 'evil' WHERE id = NEW.id; END`, false},
		{"checkpoint dropped by RAISE(IGNORE)", `CREATE TRIGGER drop_cp BEFORE INSERT ON memory_checkpoints WHEN NEW.summary LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`, true},
		{"checkpoint rewritten by a trigger", `DROP TRIGGER memory_checkpoints_no_update; CREATE TRIGGER rewrite_cp AFTER INSERT ON memory_checkpoints WHEN NEW.summary LIKE '%secret%' BEGIN
			UPDATE memory_checkpoints SET summary = 'evil' WHERE id = NEW.id; END`, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "m.db")
			s := openStore(t, path)
			ctx := context.Background()
			if _, err := s.Append(ctx, "s", "note", "first"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Checkpoint(ctx, "s", "first"); err != nil {
				t.Fatal(err)
			}
			mustExec(t, rawDB(t, path), c.ddl)
			var err error
			if c.checkpoint {
				_, err = s.Checkpoint(ctx, "s", "a secret summary")
			} else {
				_, err = s.Append(ctx, "s", "note", "a secret")
			}
			if !errors.Is(err, ErrNotStored) {
				t.Fatalf("got %v, want ErrNotStored", err)
			}
			var events, checkpoints int
			if err := rawDB(t, path).QueryRow(`SELECT (SELECT count(*) FROM memory_events), (SELECT count(*) FROM memory_checkpoints)`).Scan(&events, &checkpoints); err != nil {
				t.Fatal(err)
			}
			if events != 1 || checkpoints != 1 {
				t.Fatalf("the refused write left rows: %d events, %d checkpoints", events, checkpoints)
			}
			// Writes the trigger lets through still work.
			if _, err := s.Append(ctx, "s", "note", "plain"); err != nil {
				t.Fatal(err)
			}
			if _, err := s.Checkpoint(ctx, "s", "plain"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestStartRefusesForeignObjects: Open refuses a schema in which an object
// the server did not create references the server tables, judged by
// SQLite's parser (a name in a string literal is no reference; quoting,
// case and a schema prefix do not hide one), and names each object.
func TestStartRefusesForeignObjects(t *testing.T) {
	t.Parallel()
	const base = `CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT); CREATE TABLE notes_log(msg TEXT)`
	cases := []struct {
		name, ddl string
		want      []string // "" for allowed; else substrings of the error
	}{
		{"raise ignore on memory_events", `CREATE TRIGGER drop_secret BEFORE INSERT ON memory_events WHEN NEW.content LIKE '%secret%' BEGIN SELECT RAISE(IGNORE); END`,
			[]string{`trigger "drop_secret": `, `runs on writes to memory_events`, `DROP TRIGGER "drop_secret";`}},
		{"insert or replace from a user table", `CREATE TRIGGER relink AFTER INSERT ON notes BEGIN
			INSERT OR REPLACE INTO memory_events (id, ts, session, kind, content, prev_hash, hash) VALUES (1, 't', 's', 'k', NEW.body, 'p', 'h'); END`,
			[]string{`trigger "relink": inserts into memory_events`}},
		{"audit wiped from a user table", `CREATE TRIGGER wipe AFTER DELETE ON notes BEGIN DELETE FROM query_log WHERE 1; END`,
			[]string{`trigger "wipe": deletes from query_log`}},
		{"index shadow table written", `CREATE TRIGGER shadow AFTER UPDATE ON notes BEGIN DELETE FROM memory_events_fts_docsize WHERE id = 1; END`,
			[]string{`deletes from memory_events_fts_docsize`}},
		{"reads checkpoints", `CREATE TRIGGER peek AFTER INSERT ON notes WHEN (SELECT count(*) FROM memory_checkpoints) > 0 BEGIN INSERT INTO notes_log VALUES ('x'); END`,
			[]string{`trigger "peek": reads memory_checkpoints`}},
		{"dressed up name", `CREATE TRIGGER "Sly ""one""" AFTER INSERT ON notes BEGIN DELETE FROM "Memory_Events" WHERE 0 /* memory_events */; END`,
			[]string{`trigger "Sly ""one""": deletes from memory_events`}},
		{"own trigger name, other body", `DROP TRIGGER memory_events_no_update; CREATE TRIGGER memory_events_no_update BEFORE UPDATE ON memory_events BEGIN SELECT 1; END`,
			[]string{`trigger "memory_events_no_update": `, `runs on writes to memory_events`}},
		{"instead of trigger on a view", `CREATE VIEW v AS SELECT 1 AS x; CREATE TRIGGER vi INSTEAD OF INSERT ON v BEGIN DELETE FROM memory_checkpoints; END`,
			[]string{`trigger "vi": deletes from memory_checkpoints`}},
		{"index on memory_events", `CREATE UNIQUE INDEX one_content ON memory_events(content)`,
			[]string{`index "one_content": is an index on memory_events`}},
		{"query_errors redefined", `DROP VIEW query_errors; CREATE VIEW query_errors AS SELECT 1`,
			[]string{`view "query_errors": holds the name of a server object`}},
		{"two at once", `CREATE TRIGGER a1 BEFORE INSERT ON memory_checkpoints BEGIN SELECT RAISE(IGNORE); END; CREATE INDEX q_tool ON query_log(tool)`,
			[]string{`trigger "a1"`, `index "q_tool"`}},
		// Allowed: the agent's own objects, and views that read the memory.
		{"user trigger", `CREATE TRIGGER log AFTER INSERT ON notes BEGIN INSERT INTO notes_log VALUES ('memory_events'); END`, nil},
		{"view over the memory", `CREATE VIEW recent AS SELECT * FROM memory_events ORDER BY id DESC LIMIT 5`, nil},
		{"user index", `CREATE INDEX notes_body ON notes(body)`, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			path := filepath.Join(t.TempDir(), "m.db")
			s := openStore(t, path)
			s.Close()
			mustExec(t, rawDB(t, path), base+"; "+c.ddl)
			s2, err := Open(context.Background(), path, nil)
			if c.want == nil {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				s2.Close()
				return
			}
			if err == nil {
				s2.Close()
				t.Fatal("opened")
			}
			var fe *ForeignObjectsError
			if !errors.Is(err, ErrForeignObjects) || !errors.As(err, &fe) {
				t.Fatalf("got %v, want a ForeignObjectsError", err)
			}
			for _, w := range c.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// The reference server's file opens.
	s := openStore(t, copyReference(t))
	s.Close()
}
