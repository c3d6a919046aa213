package worker

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// bigDB is testDB plus about 12 MB of rows, so a snapshot takes several
// backup steps.
func bigDB(t *testing.T) string {
	t.Helper()
	db := testDB(t)
	c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	// zeroblob: the size is what counts, and randomblob under -race
	// took 20 s.
	if err := c.Exec(`CREATE TABLE big(b BLOB); INSERT INTO big SELECT zeroblob(4000)
		FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 3000) SELECT x FROM s)`); err != nil {
		t.Fatal(err)
	}
	return db
}

func dirNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	slices.Sort(names)
	return names
}

func TestSnapshot(t *testing.T) {
	log := hclog.NewNullLogger()
	destructive := func(db, dir string, keep int, snapTimeoutMS int64) *ipc.Request {
		req := request(db, ipc.OpQuery, "destructive", "DELETE FROM t WHERE id = 1")
		req.Snapshot = &ipc.Snapshot{Dir: dir, Stem: "w", Keep: keep, TimeoutMS: snapTimeoutMS, Partial: "w.test.partial"}
		return req
	}

	t.Run("complete snapshots only, and retention counts only them", func(t *testing.T) {
		db := testDB(t)
		dir := filepath.Join(t.TempDir(), "snaps")
		os.MkdirAll(dir, 0o700)
		// Leftovers: a partial file and an old-style incomplete snapshot.
		stale := []string{"w.old.partial", "w.20200101T000000.000Z.db", "w.20200101T000000.000Z.db-journal"}
		for _, n := range stale {
			os.WriteFile(filepath.Join(dir, n), []byte("x"), 0o600)
		}
		var frames bytes.Buffer
		for i := range 3 {
			req := destructive(db, dir, 2, 0)
			req.SQL = "INSERT INTO t (name) VALUES ('x')"
			resp := executeTo(req, log, &frames)
			if !resp.OK || !strings.Contains(resp.Text, "; snapshot: ") {
				t.Fatalf("call %d: %+v", i, resp)
			}
		}
		names := dirNames(t, dir)
		var complete []string
		for _, n := range names {
			if snapshot.IsName(n, "w") && !slices.Contains(stale, n) {
				complete = append(complete, n)
			}
		}
		if len(complete) != 2 {
			t.Fatalf("folder %v: want the 2 newest complete snapshots", names)
		}
		for _, n := range stale {
			if !slices.Contains(names, n) {
				t.Fatalf("%s is not a complete snapshot and must neither count nor be rotated away: %v", n, names)
			}
		}
		if slices.Contains(names, "w.test.partial") {
			t.Fatalf("partial file left after success: %v", names)
		}
		// Each call said when the snapshot started and when the statement did.
		if n := strings.Count(frames.String(), `"phase":"snapshot","done":0`); n != 3 {
			t.Fatalf("%d snapshot start frames, want 3:\n%s", n, frames.String())
		}
		if n := strings.Count(frames.String(), `"phase":"statement"`); n != 3 {
			t.Fatalf("%d statement frames, want 3", n)
		}
		got := snapshot.Leftovers(dir, "w")
		want := []string{filepath.Join(dir, stale[1]), filepath.Join(dir, stale[2]), filepath.Join(dir, stale[0])}
		if !slices.Equal(got, want) {
			t.Fatalf("leftovers %v, want %v", got, want)
		}
	})

	t.Run("a snapshot past its budget leaves nothing and runs nothing", func(t *testing.T) {
		db := bigDB(t)
		dir := filepath.Join(t.TempDir(), "snaps")
		// 1 ms: the deadline passes during the first 4 MiB step.
		resp := execute(destructive(db, dir, 2, 1), log)
		if resp.OK || resp.Code != errcode.Timeout || !strings.Contains(resp.Message, "snapshot was not complete") {
			t.Fatalf("got %+v", resp)
		}
		if names := dirNames(t, dir); len(names) != 0 {
			t.Fatalf("snapshot folder not empty: %v", names)
		}
		check := execute(request(db, ipc.OpQuery, "read", "SELECT count(*) FROM t"), log)
		if !strings.HasPrefix(check.Text, "count(*)\n3\n") {
			t.Fatalf("the statement ran: %q", check.Text)
		}
	})

	t.Run("the statement's timeout starts after the snapshot", func(t *testing.T) {
		db := bigDB(t)
		dir := filepath.Join(t.TempDir(), "snaps")
		req := destructive(db, dir, 2, 60_000)
		// A snapshot of three steps or more that takes longer than the
		// statement's whole timeout.
		req.Limits.TimeoutMS = 1000
		snapshotStepHook = func() { time.Sleep(400 * time.Millisecond) }
		defer func() { snapshotStepHook = func() {} }()
		var frames bytes.Buffer
		resp := executeTo(req, log, &frames)
		if !resp.OK {
			t.Fatalf("got %+v", resp)
		}
		// Pages were reported between the start and the statement.
		if !strings.Contains(frames.String(), `"total":`) {
			t.Fatalf("no page counts in the frames:\n%s", frames.String())
		}
	})

	// Another connection commits a row, which the DELETE then removes,
	// during the copy or between the copy and the write lock: the snapshot
	// must hold it, so the worker copies again under the write lock. With
	// no commit it copies once. (In rollback-journal mode the copy's shared
	// lock keeps writers out, so only the gap after it is open.)
	for _, tt := range []struct {
		name     string
		rollback bool   // the database in rollback-journal mode, not WAL
		when     string // "during", "after" the copy, or "" for no commit
	}{
		{"WAL, a commit during the copy", false, "during"},
		{"WAL, a commit between the copy and the write lock", false, "after"},
		{"rollback journal, a commit between the copy and the write lock", true, "after"},
		{"no commit: one copy", false, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			// One backup step: the hook after it still runs inside the
			// copy's read transaction.
			db := testDB(t)
			if tt.rollback {
				c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
				if err != nil {
					t.Fatal(err)
				}
				err = c.Exec("PRAGMA journal_mode=DELETE")
				c.Close()
				if err != nil {
					t.Fatal(err)
				}
			}
			steps := 0
			snapshotStepHook = func() {
				if steps++; steps == 1 && tt.when == "during" {
					commitLateRow(t, db)
				}
			}
			afterCopyHook = func() {
				if tt.when == "after" {
					commitLateRow(t, db)
				}
			}
			defer func() { snapshotStepHook, afterCopyHook = func() {}, func() {} }()
			dir := filepath.Join(t.TempDir(), "snaps")
			req := destructive(db, dir, 5, 60_000)
			req.SQL = "DELETE FROM t WHERE name = 'late'"
			resp := execute(req, log)
			want := "1"
			if tt.when == "" {
				want = "0"
			}
			if !resp.OK || !strings.HasPrefix(resp.Text, "ok: "+want+" rows affected; snapshot: ") {
				t.Fatalf("got %+v", resp)
			}
			if again := resp.Detail.Fields()["snapshot_copied_again"] == true; again != (tt.when != "") {
				t.Fatalf("copied again: %v (detail %v)", again, resp.Detail)
			}
			names := dirNames(t, dir)
			if len(names) != 1 {
				t.Fatalf("snapshot folder: %v, want one snapshot", names)
			}
			snap := execute(request(filepath.Join(dir, names[0]), ipc.OpQuery, "read", "SELECT count(*) FROM t WHERE name = 'late'"), log)
			if !strings.HasPrefix(snap.Text, "count(*)\n"+want+"\n") {
				t.Fatalf("the snapshot holds %q, want %s late row", snap.Text, want)
			}
		})
	}

	t.Run("bad names are refused", func(t *testing.T) {
		for _, s := range []ipc.Snapshot{
			{Stem: "w", Partial: "../w.x.partial"},
			{Stem: "w", Partial: "w.x.db"},
			{Stem: "w", Partial: "other.x.partial"},
			{Stem: "../w"},
			{Stem: ".."},
		} {
			if _, err := partialName(&s); errcode.Of(err) != errcode.InvalidArgument {
				t.Errorf("%+v: got %v", s, err)
			}
		}
		if name, err := partialName(&ipc.Snapshot{Stem: "w"}); err != nil || !strings.HasPrefix(name, "w.") || !strings.HasSuffix(name, snapshot.PartialSuffix) {
			t.Errorf("made-up name %q, %v", name, err)
		}
	})
}

func TestSearchProgress(t *testing.T) {
	old := progressEvery
	progressEvery = 0
	t.Cleanup(func() { progressEvery = old })
	db := testDB(t)
	c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Exec(`INSERT INTO t (name) SELECT 'n' || x FROM (WITH RECURSIVE s(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM s LIMIT 600) SELECT x FROM s)`); err != nil {
		t.Fatal(err)
	}
	c.Close()
	req := request(db, ipc.OpSearch, "read", "")
	req.Search = &ipc.Search{Pattern: "n5", Table: "t", Limit: 10, ContextChars: 5, CandidateCap: 1000}
	var frames bytes.Buffer
	if resp := executeTo(req, hclog.NewNullLogger(), &frames); !resp.OK {
		t.Fatalf("search: %+v", resp)
	}
	var got []ipc.Progress
	_, err = ipc.ReadResponseProgress(io.MultiReader(&frames, strings.NewReader(fmt.Sprintf(`{"v":%d,"ok":true}`+"\n", ipc.Version))), func(p ipc.Progress) { got = append(got, p) })
	if err != nil {
		t.Fatal(err)
	}
	want := []ipc.Progress{{Phase: ipc.PhaseSearch, Done: 256, Total: 1000}, {Phase: ipc.PhaseSearch, Done: 512, Total: 1000}}
	if !slices.Equal(got, want) {
		t.Fatalf("frames %+v, want %+v", got, want)
	}
}

// executeTo runs req in this process with its progress frames going to
// progress, and closes the connection.
func executeTo(req *ipc.Request, log hclog.Logger, progress io.Writer) *ipc.Response {
	resp, release := executeHeld(req, log, progress)
	release()
	return resp
}

// commitLateRow commits a row from a connection of its own.
func commitLateRow(t *testing.T, db string) {
	t.Helper()
	c, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Error(err)
		return
	}
	defer c.Close()
	if err := c.Exec("INSERT INTO t (name) VALUES ('late')"); err != nil {
		t.Error(err)
	}
}

// TestSnapshotNow: the snapshot tool's request copies the database whole,
// keeps and rotates like a destructive query's snapshot, runs while
// another connection holds the write lock (it needs none), and reports a
// folder it cannot create as DATABASE_UNAVAILABLE, leaving nothing behind.
func TestSnapshotNow(t *testing.T) {
	log := hclog.NewNullLogger()
	db := testDB(t)
	dir := filepath.Join(t.TempDir(), "snaps")
	now := func(dir string, keep int) *ipc.Request {
		req := request(db, ipc.OpSnapshot, "read", "")
		req.Snapshot = &ipc.Snapshot{Dir: dir, Stem: "w", Keep: keep, Partial: "w.now.partial"}
		return req
	}
	// A writer holds the write lock, uncommitted, through every copy.
	w, err := rawsqlite.Open(db, rawsqlite.ReadWrite)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := w.Exec("BEGIN IMMEDIATE; INSERT INTO t (name) VALUES ('uncommitted')"); err != nil {
		t.Fatal(err)
	}
	var frames bytes.Buffer
	var paths []string
	for i := range 3 {
		resp := executeTo(now(dir, 2), log, &frames)
		path, ok := strings.CutPrefix(resp.Text, "ok: snapshot written: ")
		if !resp.OK || !ok || resp.Detail.Fields()["snapshot"] != path {
			t.Fatalf("call %d: %+v", i, resp)
		}
		paths = append(paths, path)
		time.Sleep(2 * time.Millisecond)
	}
	if names := dirNames(t, dir); len(names) != 2 || names[0] != filepath.Base(paths[1]) || names[1] != filepath.Base(paths[2]) {
		t.Fatalf("folder %v: want the 2 newest of %v", names, paths)
	}
	if !strings.Contains(frames.String(), `"phase":"snapshot"`) || strings.Contains(frames.String(), `"phase":"statement"`) {
		t.Fatalf("progress frames: want snapshot ones and no statement phase:\n%s", frames.String())
	}
	// The copy holds the committed rows, not the open transaction's.
	c, err := rawsqlite.Open(paths[2], rawsqlite.ReadOnly)
	if err != nil {
		t.Fatal(err)
	}
	st, _, err := c.Prepare("SELECT count(*) FROM t")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.Step(); err != nil || st.ColumnInt64(0) != 3 {
		t.Fatalf("snapshot has %d rows of t (%v), want the 3 committed", st.ColumnInt64(0), err)
	}
	st.Finalize()
	c.Close()

	blocker := filepath.Join(t.TempDir(), "a-file")
	os.WriteFile(blocker, []byte("x"), 0o600)
	resp := executeTo(now(filepath.Join(blocker, "snaps"), 2), log, io.Discard)
	if resp.OK || resp.Code != errcode.DatabaseUnavailable || !strings.Contains(resp.Message, "cannot create the snapshot folder") || !strings.Contains(resp.Message, "no snapshot was kept") {
		t.Fatalf("unreachable folder: %+v", resp)
	}
	if resp := executeTo(now(dir, 0), log, io.Discard); resp.OK || resp.Code != errcode.InvalidArgument {
		t.Fatalf("keep 0: %+v", resp)
	}
}

// TestSnapshotAmongFutureFiles: destructive_query and the snapshot tool
// answer the path of a snapshot that exists, and say which files they did
// not trust.
func TestSnapshotAmongFutureFiles(t *testing.T) {
	for _, op := range []ipc.Op{ipc.OpQuery, ipc.OpSnapshot} {
		t.Run(string(op), func(t *testing.T) {
			db := testDB(t)
			dir := filepath.Join(t.TempDir(), "snaps")
			os.MkdirAll(dir, 0o700)
			for i := range 5 {
				n := snapshot.FileName("w", "", time.Now().Add(time.Duration(i+1)*24*time.Hour))
				os.WriteFile(filepath.Join(dir, n), []byte("planted"), 0o600)
			}
			req := request(db, op, "destructive", "DELETE FROM t WHERE id = 1")
			if op == ipc.OpSnapshot {
				req.Mode = "read"
			}
			req.Snapshot = &ipc.Snapshot{Dir: dir, Stem: "w", Keep: 5}
			resp := execute(req, hclog.NewNullLogger())
			if !resp.OK {
				t.Fatalf("%s: %s", resp.Code, resp.Message)
			}
			path, _ := resp.Detail.Fields()["snapshot"].(string)
			if _, err := os.Stat(path); path == "" || err != nil {
				t.Fatalf("answered snapshot %q, which does not exist (%v): %s", path, err, resp.Text)
			}
			if !strings.Contains(resp.Text, path+"; note: 5 files in the snapshot folder are named after this snapshot") {
				t.Fatalf("answer %q does not report the future-dated files", resp.Text)
			}
			if n := len(dirNames(t, dir)); n != 6 {
				t.Fatalf("%d files left, want the 5 planted and the new one", n)
			}
		})
	}
}
