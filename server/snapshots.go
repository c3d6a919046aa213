package server

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/worker"
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
// with a hot journal). takeHold calls it only while this server holds the
// database alone (no other server, no restore), since a partial file may
// belong to a running snapshot. It opens no descriptor of the database.
func (s *Server) removeSnapshotLeftovers() {
	if s.cfg.SnapshotDir == "" {
		return
	}
	for _, p := range worker.SnapshotLeftovers(s.cfg.SnapshotDir, Stem(s.dbPath)) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("could not remove what a stopped snapshot left", "file", p, "error", err)
			continue
		}
		s.log.Info("removed what a stopped snapshot left", "file", p)
	}
}
