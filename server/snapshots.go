package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/filelock"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// partialName is a fresh name for a snapshot being written:
// <stem>.<random>.partial.
func partialName(stem string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return stem + "." + hex.EncodeToString(b[:]) + ipc.PartialSuffix
}

// removePartial removes the partial file of a request whose worker has
// ended: nothing when the snapshot was completed (renamed) or the worker
// removed it, the leftover when the worker was killed while writing it.
func removePartial(s *ipc.Snapshot) {
	p := filepath.Join(s.Dir, s.Partial)
	for _, f := range []string{p, p + "-journal"} {
		_ = os.Remove(f)
	}
}

// removeSnapshotLeftovers removes what snapshots stopped by a crash left in
// the snapshot folder (partial files; in-place snapshots of older versions
// with a hot journal). It does so only while no other server holds the
// database, since a partial file may belong to a running snapshot.
func (s *Server) removeSnapshotLeftovers() {
	if s.cfg.SnapshotDir == "" {
		return
	}
	f, err := os.Open(s.dbPath)
	if err != nil {
		return
	}
	defer f.Close()
	if err := filelock.Exclusive(f); err != nil {
		if !errors.Is(err, filelock.ErrHeld) {
			s.log.Debug("snapshot leftovers not checked", "error", err)
		}
		return
	}
	for _, p := range ipc.SnapshotLeftovers(s.cfg.SnapshotDir, Stem(s.dbPath)) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("could not remove what a stopped snapshot left", "file", p, "error", err)
			continue
		}
		s.log.Info("removed what a stopped snapshot left", "file", p)
	}
}
