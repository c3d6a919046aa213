package worker

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// snapshot backs the database up with SQLite's online backup API into
// <dir>/<stem>.<YYYYMMDDTHHMMSS.mmm>Z.db and keeps the newest Keep files.
// It returns "" when snapshots are disabled.
func (ex *executor) snapshot() (string, error) {
	s := ex.req.Snapshot
	if s == nil || s.Keep <= 0 {
		return "", nil
	}
	if err := os.MkdirAll(s.Dir, 0o700); err != nil {
		return "", ipc.NewError(ipc.CodeDatabaseUnavailable, "cannot create the snapshot folder: "+err.Error()+"; nothing was run")
	}
	name := s.Stem + "." + time.Now().UTC().Format("20060102T150405.000") + "Z.db"
	path := filepath.Join(s.Dir, name)
	if err := ex.conn.Backup(path); err != nil {
		return "", ipc.NewError(ipc.CodeDatabaseUnavailable, "the snapshot failed, so the statement was not run: "+err.Error())
	}
	rotate(s.Dir, s.Stem, s.Keep, ex)
	return path, nil
}

// rotate removes all but the newest keep snapshots of stem. The timestamp
// format sorts by name in time order.
func rotate(dir, stem string, keep int, ex *executor) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var names []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, stem+".") && strings.HasSuffix(n, "Z.db") && isSnapshotStamp(n[len(stem)+1:len(n)-len("Z.db")]) {
			names = append(names, n)
		}
	}
	sort.Strings(names)
	for len(names) > keep {
		if err := os.Remove(filepath.Join(dir, names[0])); err != nil {
			ex.log.Warn("could not remove an old snapshot", "file", names[0], "error", err)
		}
		names = names[1:]
	}
}

func isSnapshotStamp(s string) bool {
	_, err := time.Parse("20060102T150405.000", s)
	return err == nil
}
