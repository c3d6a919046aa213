package tests

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// TestPathsWithSpacesAndNonASCII: a database and a snapshot folder whose
// paths hold spaces and non-ASCII letters (on Windows also with forward
// slashes after the drive letter, as JSON configs often write them) work
// end to end: the memory, a snapshot before a DELETE, a restore, verify.
func TestPathsWithSpacesAndNonASCII(t *testing.T) {
	t.Parallel()
	base := filepath.Join(testDir(t), "my memory", "Ärger 記憶")
	spellings := map[string]string{"native": filepath.Join(base, "memory.db")}
	if runtime.GOOS == "windows" {
		if vol := filepath.VolumeName(base); len(vol) != 2 || vol[1] != ':' {
			t.Fatalf("temp folder %s has no drive letter", base)
		}
		spellings["forward slashes"] = filepath.ToSlash(filepath.Join(base, "fwd", "memory.db"))
	}
	for name, db := range spellings {
		t.Run(name, func(t *testing.T) {
			snapDir := filepath.Join(filepath.Dir(db), "snap shots ü")
			s := start(t, db, "--snapshot-dir", snapDir)
			s.ok("write_query", q("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)"))
			s.ok("write_query", q("INSERT INTO notes (body) VALUES ('één'), ('二')"))
			s.ok("append_event", map[string]any{"content": "written under " + db})
			text := s.ok("destructive_query", map[string]any{"query": "DELETE FROM notes", "reason": "test"})
			snap, ok := strings.CutPrefix(text[strings.Index(text, "snapshot: "):], "snapshot: ")
			if !ok || !strings.HasPrefix(filepath.Clean(snap), filepath.Clean(snapDir)) {
				t.Fatalf("snapshot %q is not in %s", text, snapDir)
			}
			if _, err := os.Stat(snap); err != nil {
				t.Fatalf("snapshot file: %v", err)
			}
			s.c.Close()
			var out []byte
			var err error
			if !waitFor(10*time.Second, func() bool {
				out, err = exec.Command(serverBin, "restore", "--db", db, snap).CombinedOutput()
				return err == nil
			}) {
				t.Fatalf("restore: %v\n%s", err, out)
			}
			s2 := start(t, db, "--snapshot-dir", snapDir)
			if got := s2.ok("read_query", q("SELECT body FROM notes ORDER BY id")); got != "body\néén\n二\n# 2 rows" {
				t.Fatalf("after the restore: %q", got)
			}
			s2.c.Close()
			if out, err := exec.Command(serverBin, "verify", "--db", db).CombinedOutput(); err != nil {
				t.Fatalf("verify: %v\n%s", err, out)
			}
		})
	}
}
