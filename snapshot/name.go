package snapshot

import (
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// The names of the files in the snapshot folder, which the front and the
// worker both read: a worker writes <stem>.<random>.partial and renames it
// to <stem>.<stamp>Z<tag>.db when it is complete (PartialSuffix).

// PartialSuffix ends the name of every snapshot still being written; a
// file with it is never a complete snapshot.
const PartialSuffix = ".partial"

// stampLayout is the time in a snapshot's name; it sorts by name in time
// order.
const stampLayout = "20060102T150405.000"

// PreRestoreTag marks the name of the safety snapshot that restore takes
// of the state it replaces: <stem>.<stamp>Z.pre-restore.db. It is a full
// copy, or an undo record of the restore when restore applied an undo
// record of rows; either counts toward retention.
const PreRestoreTag = ".pre-restore"

// UndoTag marks an undo record's name: <stem>.<stamp>Z.undo.db (package
// undo; SPEC 5.6). It counts toward retention like a full copy.
const UndoTag = ".undo"

// Tags are the name parts a snapshot may carry between its stamp
// and ".db" ("" for destructive_query's and the snapshot tool's).
var Tags = []string{"", PreRestoreTag, UndoTag}

// FileName is the name of the snapshot of stem taken at taken,
// with tag (one of Tags): <stem>.<stamp>Z<tag>.db.
func FileName(stem, tag string, taken time.Time) string {
	return stem + "." + taken.UTC().Format(stampLayout) + "Z" + tag + ".db"
}

// IsName reports whether name (a file name, no folder) is
// <stem>.<stamp>Z<tag>.db for one of Tags, as retention counts
// them. The stamp comes first, so names sort in time order whatever their
// tag.
func IsName(name, stem string) bool {
	_, ok := Stamp(name, stem)
	return ok
}

// Stamp is the time in the name of a snapshot of stem (UTC), and
// whether name is one. The name is only what a file says of itself: a
// planted file, or one written before the clock was set back, may carry
// any time.
func Stamp(name, stem string) (time.Time, bool) {
	for _, tag := range Tags {
		end := "Z" + tag + ".db"
		if !strings.HasPrefix(name, stem+".") || !strings.HasSuffix(name, end) || len(name) < len(stem)+1+len(end) {
			continue
		}
		if t, err := time.Parse(stampLayout, name[len(stem)+1:len(name)-len(end)]); err == nil {
			return t, true
		}
	}
	return time.Time{}, false
}

// Leftovers lists what stopped snapshots of stem left in dir:
// partial files (and any journal of theirs), and snapshots that an older
// version wrote in place and never finished (a hot journal beside them),
// with that journal. Call it only while no worker of any server may be
// writing a snapshot of this database: a partial file of a running
// snapshot looks the same.
func Leftovers(dir, stem string) []string {
	names := folderNames(dir)
	if names == nil {
		return nil
	}
	var out []string
	for n := range names {
		base, _ := strings.CutSuffix(n, "-journal")
		switch {
		case strings.HasPrefix(base, stem+".") && strings.HasSuffix(base, PartialSuffix):
			out = append(out, filepath.Join(dir, n))
		case IsName(base, stem) && names[base+"-journal"]:
			// The snapshot and its journal are both listed, once each.
			out = append(out, filepath.Join(dir, n))
		}
	}
	sort.Strings(out)
	return out
}

// folderNames is the set of the names in dir, or nil when it cannot be
// read.
func folderNames(dir string) map[string]bool {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	names := map[string]bool{}
	for _, e := range entries {
		names[e.Name()] = true
	}
	return names
}
