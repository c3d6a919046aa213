package memory

import (
	"context"
	"path/filepath"
	"slices"
	"testing"
)

// TestOpenedSaysWhatItChanged: Open reports the schema objects it created
// and the switch to WAL, so that the server can say so; a memory opened
// again reports nothing.
func TestOpenedSaysWhatItChanged(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	app := filepath.Join(dir, "app.db")
	raw := rawDB(t, app)
	mustExec(t, raw, "CREATE TABLE orders (id INTEGER PRIMARY KEY)")
	raw.Close()
	for _, tt := range []struct {
		name, path string
	}{
		{"another program's database", app},
		{"a new file", filepath.Join(dir, "new.db")},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(ctx, tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := s.Opened()
			s.Close()
			for _, want := range []string{TableEvents, TableCheckpoints, TableQueryLog} {
				if !slices.Contains(got.Added, want) {
					t.Errorf("added %v: no %s", got.Added, want)
				}
			}
			if slices.Contains(got.Added, "orders") {
				t.Errorf("added %v counts the program's own table", got.Added)
			}
			// A new file is switched too; the server says "created" then.
			if !got.WAL {
				t.Errorf("WAL not reported: %+v", got)
			}
			again, err := Open(ctx, tt.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer again.Close()
			if o := again.Opened(); len(o.Added) != 0 || o.WAL {
				t.Errorf("opened again: %+v, want nothing", o)
			}
		})
	}
}
