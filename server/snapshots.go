package server

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/config"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

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
	for _, p := range snapshot.Leftovers(s.cfg.SnapshotDir, config.Stem(s.dbPath)) {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			s.log.Warn("could not remove what a stopped snapshot left", "file", p, "error", err)
			continue
		}
		s.log.Info("removed what a stopped snapshot left", "file", p)
	}
}

// snapshotSkipped is the snapshot tool's answer when no snapshot was
// written; the audit row's detail says why.
const snapshotSkipped = "ok: snapshot skipped (disabled or target unavailable)"

// snapshotTool answers snapshot(reason="manual"): a full copy taken by a
// worker, as destructive_query's snapshot is (the worker path already
// copies a file other servers may be writing, under the sandbox, with
// progress and a kill on cancellation). A snapshot that cannot be taken
// (disabled, a folder that cannot be made, a full disk, its time budget
// spent) is reported as skipped, never raised, as the reference does; a
// cancelled call gets no answer, like any other.
func (s *Server) snapshotTool(ctx context.Context, c *call, a args) (outcome, error) {
	v, err := snapshotParams.parse(a, c)
	if err != nil {
		return outcome{}, err
	}
	reason := strings.TrimSpace(v.str("reason"))
	if reason == "" {
		reason = "manual"
	}
	c.setQuery(reason)
	c.detail["reason"] = reason
	skip := func(why string) (outcome, error) {
		c.detail["snapshot"], c.detail["skipped"] = nil, why
		s.log.Warn("snapshot skipped", "reason", reason, "why", why)
		return outcome{text: snapshotSkipped}, nil
	}
	if s.cfg.Snapshots <= 0 {
		return skip("snapshots are disabled (--snapshots 0)")
	}
	if s.cluster != nil && s.cluster.remote != nil {
		// No local node: the cluster's backup (cluster_remote.go).
		path, err := s.remoteSnapshotFile(c, &ipc.Snapshot{Dir: s.cfg.SnapshotDir, Stem: config.Stem(s.dbPath), Keep: s.cfg.Snapshots})
		if err != nil {
			return skip(err.Error())
		}
		return outcome{text: "ok: snapshot written: " + path}, nil
	}
	req := s.request(ipc.OpSnapshot, ipc.ModeRead)
	req.Snapshot = &ipc.Snapshot{Dir: s.cfg.SnapshotDir, Stem: config.Stem(s.dbPath), Keep: s.cfg.Snapshots}
	resp, err := s.run(c, req)
	if err != nil {
		if ctx.Err() != nil {
			return outcome{}, err
		}
		return skip(err.Error())
	}
	return outcome{text: resp.Text}, nil
}
