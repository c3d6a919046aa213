package tests

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestRotationAmongFutureFiles (SPEC 5.6): five snapshot-named files dated
// in the future sit in the snapshot folder (a clock set back, or planted by
// anything that can write there). destructive_query, with a full copy and
// with an undo record, and the snapshot tool each keep the snapshot they
// just wrote, answer its path (which exists), leave the five alone and
// name them in the answer. Today's main removed the new snapshot as the
// "oldest" and answered its path anyway.
func TestRotationAmongFutureFiles(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, tool string
		args       map[string]any
		flags      []string
		prefix     string
	}{
		{"destructive_query full copy", "destructive_query", map[string]any{"query": "DELETE FROM t WHERE id = 1", "reason": "tidy"}, nil, "ok: 1 rows affected; snapshot: "},
		{"destructive_query undo record", "destructive_query", map[string]any{"query": "DELETE FROM t WHERE id = 1", "reason": "tidy"}, []string{"--snapshot-mode", "undo"}, "ok: 1 rows affected; snapshot: "},
		{"snapshot tool", "snapshot", map[string]any{"reason": "before a change"}, nil, "ok: snapshot written: "},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := newDB(t)
			dir := filepath.Join(filepath.Dir(db), "memory.snapshots")
			if err := os.MkdirAll(dir, 0o700); err != nil {
				t.Fatal(err)
			}
			var planted []string
			for i := range 5 {
				n := "memory." + time.Now().UTC().AddDate(0, 0, i+1).Format("20060102T150405.000") + "Z.db"
				planted = append(planted, n)
				if err := os.WriteFile(filepath.Join(dir, n), []byte("not a snapshot of this server"), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			s := start(t, db, append([]string{"--snapshots", "5"}, tt.flags...)...)
			s.ok("write_query", q("CREATE TABLE t (id INTEGER PRIMARY KEY, v TEXT)"))
			s.ok("write_query", q("INSERT INTO t (v) VALUES ('a'), ('b')"))
			text := s.ok(tt.tool, tt.args)
			path, note, found := strings.Cut(strings.TrimPrefix(text, tt.prefix), "; note: ")
			if !strings.HasPrefix(text, tt.prefix) {
				t.Fatalf("answer %q: want %q and the path", text, tt.prefix)
			}
			if _, err := os.Stat(path); err != nil {
				t.Fatalf("answered snapshot %s, which is not there: %v (folder %v)", path, err, snapshotFiles(t, db))
			}
			if !found {
				t.Fatalf("answer %q does not report the future-dated files", text)
			}
			if !strings.HasPrefix(note, "5 files in the snapshot folder are named after this snapshot") || !strings.Contains(note, planted[0]) {
				t.Fatalf("note %q does not report the future-dated files", note)
			}
			files := snapshotFiles(t, db)
			for _, n := range planted {
				if _, err := os.Stat(filepath.Join(dir, n)); err != nil {
					t.Fatalf("%s was removed: folder %v", n, files)
				}
			}
			if len(files) != 6 {
				t.Fatalf("folder %v: want the 5 planted files and the new snapshot", files)
			}
		})
	}
}
