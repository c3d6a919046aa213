package memory

import (
	"context"
	"errors"
	"path/filepath"
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
