package portable

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// TestImportRefusedLeavesExistingTarget: a refused import into an existing
// file leaves it exactly as it was (the schema is created in the import's
// own transaction), and a target with a foreign trigger is refused before
// a row is written.
func TestImportRefusedLeavesExistingTarget(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	good := exportOf(t, copyReference(t))
	bad := strings.Replace(string(good), `"content":"`, `"content":"X`, 1)
	cases := []struct {
		name, ddl, file string
		want            error
	}{
		{"broken chain", `CREATE TABLE notes(id INTEGER PRIMARY KEY, body TEXT)`, bad, nil},
		{"foreign trigger", `CREATE TABLE memory_events (id INTEGER PRIMARY KEY, ts TEXT NOT NULL, session TEXT NOT NULL, kind TEXT NOT NULL DEFAULT 'note', content TEXT NOT NULL, prev_hash TEXT NOT NULL, hash TEXT NOT NULL UNIQUE);
			CREATE TRIGGER drop_all BEFORE INSERT ON memory_events BEGIN SELECT RAISE(IGNORE); END`, string(good), memory.ErrForeignObjects},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			target := filepath.Join(t.TempDir(), "existing.db")
			db := rawDB(t, target)
			mustExec(t, db, c.ddl)
			before := masterRows(t, db)
			_, err := Import(ctx, target, strings.NewReader(c.file), nil)
			var le *LineError
			if err == nil || (c.want != nil && !errors.Is(err, c.want)) || (c.want == nil && !errors.As(err, &le)) {
				t.Fatalf("import: %v, want %v", err, c.want)
			}
			if after := masterRows(t, db); !slices.Equal(before, after) {
				t.Fatalf("the refused import changed the schema:\n%q\n%q", before, after)
			}
		})
	}
}
