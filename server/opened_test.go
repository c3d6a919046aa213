package server

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/memory"
)

// TestPathBefore: what a start says it created or changed at --db.
func TestPathBefore(t *testing.T) {
	dir := t.TempDir()
	existing := filepath.Join(dir, "app.db")
	if err := os.WriteFile(existing, []byte("SQLite format 3\x00"), 0o644); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(empty, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	fresh := memory.Opened{Added: []string{"memory_events", "memory_checkpoints", "query_log", "memory_events_ts"}, WAL: true}
	tests := []struct {
		name, path       string
		opened           memory.Opened
		created, changed string // "" for nothing said; else a part of it
	}{
		{"new file", filepath.Join(dir, "m.db"), fresh, "created a new memory database at " + filepath.Join(dir, "m.db"), ""},
		{"new folders", filepath.Join(dir, "a", "b", "m.db"), fresh, "(and its folder " + filepath.Join(dir, "a", "b") + ")", ""},
		{"empty file", empty, fresh, "created a new memory database at " + empty, ""},
		{"another program's database", existing, fresh, "", existing + " was an existing SQLite database without the server's tables: added 4 schema objects (the tables memory_events, memory_checkpoints, query_log, with"},
		{"WAL said", existing, fresh, "", "and switched it to WAL journal mode. Your own tables are untouched. To look at another program's database without changing it, run with --profile readonly"},
		{"already WAL", existing, memory.Opened{Added: fresh.Added}, "", "full-text index). Your own tables"},
		{"a memory opened again", existing, memory.Opened{}, "", ""},
		{"a memory given a table it lacked", existing, memory.Opened{Added: []string{"query_log"}}, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := surveyPath(tt.path)
			if got := p.created(); (tt.created == "") != (got == "") || !strings.Contains(got, tt.created) {
				t.Errorf("created %q, want %q", got, tt.created)
			}
			if got := p.changed(tt.opened); (tt.changed == "") != (got == "") || !strings.Contains(got, tt.changed) {
				t.Errorf("changed %q, want %q", got, tt.changed)
			}
		})
	}
}
