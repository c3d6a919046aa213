package snapshot

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/osfile"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// The files of the snapshot folder: a full copy, a partial name to write
// one under, keeping one under its snapshot name, and retention. The
// worker writes destructive_query's and the snapshot tool's this way,
// restore its safety snapshot.

// FullCopy copies the database of src with SQLite's online backup API
// into <dir>/<stem>.<stamp>Z<tag>.db (tag "" or PreRestoreTag) under a
// partial name, syncs it and renames it when complete, as
// destructive_query's snapshots are written, and returns its path. It
// removes no other snapshot: retention runs with the next
// destructive_query or snapshot call.
func FullCopy(src *rawsqlite.Conn, dir, stem, tag string) (string, error) {
	if err := checkName(stem, tag); err != nil {
		return "", err
	}
	tmp, err := NewPartial(dir, stem)
	if err != nil {
		return "", err
	}
	started := time.Now()
	if err := src.Backup(tmp); err != nil {
		return "", err
	}
	path, err := keepAs(tmp, dir, stem, tag, started)
	if err != nil {
		_ = os.Remove(tmp)
		return "", err
	}
	return path, nil
}

// NewPartial creates the snapshot folder dir if needed and returns a
// fresh partial name in it for a snapshot of stem, which retention and the
// leftover sweep know (restore writes its safety undo record there).
func NewPartial(dir, stem string) (string, error) {
	if err := osfile.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("cannot create the snapshot folder: %w", err)
	}
	if !PlainName(stem) {
		return "", fmt.Errorf("snapshot stem %q must be a plain file name", stem)
	}
	return filepath.Join(dir, NewPartialName(stem)), nil
}

// NewPartialName is a fresh partial name for a snapshot of stem:
// <stem>.<16 random hex digits>.partial. The front names the partial file
// of a worker's snapshot with it (so that it can remove what a killed
// worker left), and a worker run by hand names its own.
func NewPartialName(stem string) string {
	var b [8]byte
	_, _ = rand.Read(b[:]) // never fails on supported platforms
	return stem + "." + hex.EncodeToString(b[:]) + PartialSuffix
}

// PlainName reports whether name is a plain file name: not empty, "." or
// "..", and no folder in it.
func PlainName(name string) bool {
	return name != "" && name != "." && name != ".." && !strings.ContainsAny(name, `/\`) && filepath.Base(name) == name
}

// Keep syncs the complete copy at tmp and renames it to its snapshot name
// in dir (the time it was taken, then tag, which must be one of Tags),
// then syncs the folder so that the name survives a power loss.
func Keep(tmp, dir, stem, tag string, taken time.Time) (string, error) {
	if err := checkName(stem, tag); err != nil {
		return "", err
	}
	return keepAs(tmp, dir, stem, tag, taken)
}

// checkName refuses a stem and tag that make no snapshot name.
func checkName(stem, tag string) error {
	if !PlainName(stem) || !slices.Contains(Tags, tag) {
		return fmt.Errorf("snapshot name %q%q is not a snapshot name", stem, tag)
	}
	return nil
}

// keepAs is Keep without the name checks.
func keepAs(tmp, dir, stem, tag string, taken time.Time) (string, error) {
	f, err := os.OpenFile(tmp, os.O_RDWR, 0)
	if err != nil {
		return "", err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	// Two snapshots in one millisecond (two servers on one file) must not
	// replace each other.
	for range 1000 {
		path := filepath.Join(dir, FileName(stem, tag, taken))
		if nameFree(dir, stem, taken) {
			if err := os.Rename(tmp, path); err != nil {
				return "", err
			}
			osfile.SyncDir(dir)
			return path, nil
		}
		taken = taken.Add(time.Millisecond)
	}
	return "", errors.New("no free snapshot name")
}

// nameFree reports whether no snapshot of stem of any tag was taken at
// taken: snapshots of all kinds share one history, one snapshot per stamp.
func nameFree(dir, stem string, taken time.Time) bool {
	for _, tag := range Tags {
		if _, err := os.Lstat(filepath.Join(dir, FileName(stem, tag, taken))); !errors.Is(err, os.ErrNotExist) {
			return false
		}
	}
	return true
}

// futureSkew is how far after the snapshot just written another
// snapshot's name may be dated and still be trusted: two servers on one
// file, or a name moved on by a millisecond to be free, stay well inside
// it.
const futureSkew = time.Minute

// Rotate keeps the snapshot just written (kept, a path in dir) and the
// newest keep-1 other complete snapshots of stem, full copies and undo
// records together, and removes the rest.
//
// Only names say when a snapshot was taken, and anything that can write
// the folder can choose one: a snapshot named later than the one just
// written (beyond futureSkew) was not written by this clock's present (a
// clock set back, or a planted file), so it is neither counted nor
// removed, and it is reported in the log and returned (sorted) for the
// answer. The snapshot just written is never removed, whatever names
// surround it. Partial files are not snapshots and do not count; neither
// does a snapshot with a journal beside it (an incomplete one from a
// version that wrote snapshots in place), which Leftovers reports.
func Rotate(dir, stem string, keep int, kept string, log hclog.Logger) (foreign []string) {
	names := folderNames(dir)
	if names == nil {
		return nil
	}
	just := filepath.Base(kept)
	ref, ok := Stamp(just, stem)
	if !ok || filepath.Dir(kept) != filepath.Clean(dir) {
		// Not a snapshot of this folder: judge names by the clock.
		ref, just = time.Now().UTC(), ""
	}
	var complete []string
	for n := range names {
		stamp, ok := Stamp(n, stem)
		switch {
		case !ok || names[n+"-journal"] || n == just:
		case stamp.After(ref.Add(futureSkew)):
			foreign = append(foreign, n)
		default:
			complete = append(complete, n)
		}
	}
	if len(foreign) > 0 {
		sort.Strings(foreign)
		log.Warn("files in the snapshot folder are named after the snapshot just written (a clock set back, or files this server did not write): they are neither counted toward --snapshots nor removed", "folder", dir, "files", foreign)
	}
	if just != "" {
		keep-- // the snapshot just written is one of those kept
	}
	sort.Strings(complete)
	for len(complete) > max(keep, 0) {
		if err := os.Remove(filepath.Join(dir, complete[0])); err != nil {
			log.Warn("could not remove an old snapshot", "file", complete[0], "error", err)
		}
		// A snapshot is a WAL database: opening one by hand leaves these.
		for _, companion := range []string{"-wal", "-shm"} {
			if names[complete[0]+companion] {
				_ = os.Remove(filepath.Join(dir, complete[0]+companion))
			}
		}
		complete = complete[1:]
	}
	return foreign
}
