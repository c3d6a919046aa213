package harness

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
)

func TestSelectTasks(t *testing.T) {
	tests := []struct {
		name    string
		only    []string
		wantIDs []string // nil: every task
		wantErr string
	}{
		{"all", nil, nil, ""},
		{"two, in the file's order", []string{"revenue_2025", "discover_tables"}, []string{"discover_tables", "revenue_2025"}, ""},
		{"unknown", []string{"discover_tables", "nope"}, nil, `unknown task "nope"` + "\nTry one of: discover_tables, "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tasks, err := SelectTasks(tt.only)
			if tt.wantErr != "" {
				var ue *config.UsageError
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("got %v, want a usage error with %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			var ids []string
			for _, task := range tasks {
				ids = append(ids, task.ID)
			}
			if tt.wantIDs == nil && len(ids) < 10 || tt.wantIDs != nil && strings.Join(ids, ",") != strings.Join(tt.wantIDs, ",") {
				t.Fatalf("tasks %v, want %v", ids, tt.wantIDs)
			}
		})
	}
}

func TestDatabase(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	keep := filepath.Join(dir, "kept")
	if err := os.Mkdir(keep, 0o755); err != nil {
		t.Fatal(err)
	}
	// A fresh sample in keep, which stays after cleanup.
	path, cleanup, err := Database(ctx, "", keep)
	if err != nil || path != filepath.Join(keep, "shop.db") {
		t.Fatalf("sample in keep: %q, %v", path, err)
	}
	cleanup()
	if _, err := os.Stat(path); err != nil {
		t.Fatalf("the kept sample is gone: %v", err)
	}
	// The same folder again: a usage error, the file untouched.
	if _, _, err := Database(ctx, "", keep); err == nil || !strings.Contains(err.Error(), "exists already; give --keep an empty folder") {
		t.Fatalf("keep twice: %v", err)
	}
	// A given database is used where it is; a folder or a missing file is refused.
	if got, _, err := Database(ctx, path, ""); err != nil || got != path {
		t.Fatalf("given: %q, %v", got, err)
	}
	for _, bad := range []string{keep, filepath.Join(dir, "none.db")} {
		var ue *config.UsageError
		if _, _, err := Database(ctx, bad, ""); !errors.As(err, &ue) || !strings.Contains(err.Error(), "is not a database file") {
			t.Errorf("--db %s: %v", bad, err)
		}
	}
	// Without keep: a temporary folder that cleanup removes.
	tmp, cleanup, err := Database(ctx, "", "")
	if err != nil {
		t.Fatal(err)
	}
	cleanup()
	if _, err := os.Stat(filepath.Dir(tmp)); !os.IsNotExist(err) {
		t.Fatalf("the temporary folder of %s is still there: %v", tmp, err)
	}
}
