package ipc

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The names of the files in the snapshot folder, which the front and the
// worker both read: a worker writes <stem>.<random>.partial and renames it
// to <stem>.<stamp>Z.db when it is complete (PartialSuffix).

// stampLayout is the time in a snapshot's name; it sorts by name in time
// order.
const stampLayout = "20060102T150405.000"

// SnapshotFileName is the name of the snapshot of stem taken at taken.
func SnapshotFileName(stem string, taken time.Time) string {
	return stem + "." + taken.UTC().Format(stampLayout) + "Z.db"
}

// IsSnapshotName reports whether name is <stem>.<stamp>Z.db.
func IsSnapshotName(name, stem string) bool {
	if !strings.HasPrefix(name, stem+".") || !strings.HasSuffix(name, "Z.db") || len(name) < len(stem)+1+len("Z.db") {
		return false
	}
	_, err := time.Parse(stampLayout, name[len(stem)+1:len(name)-len("Z.db")])
	return err == nil
}

// SnapshotLeftovers lists what stopped snapshots of stem left in dir:
// partial files (and any journal of theirs), and snapshots that an older
// version wrote in place and never finished (a hot journal beside them),
// with that journal. Call it only while no worker of any server may be
// writing a snapshot of this database: a partial file of a running
// snapshot looks the same.
func SnapshotLeftovers(dir, stem string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	var out []string
	for n := range names {
		base, _ := strings.CutSuffix(n, "-journal")
		switch {
		case strings.HasPrefix(base, stem+".") && strings.HasSuffix(base, PartialSuffix):
			out = append(out, filepath.Join(dir, n))
		case IsSnapshotName(base, stem) && names[base+"-journal"]:
			// The snapshot and its journal are both listed, once each.
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out
}
