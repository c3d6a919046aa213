package tests

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// TestClusterWorkerOnNodeFile drives real, sandboxed worker processes the
// way a cluster's front does (SPEC 13): on a node's file in WAL mode,
// opened read-only while another process (this test, standing in for
// rqlited) writes it, reads run and writes are judged, never run.
func TestClusterWorkerOnNodeFile(t *testing.T) {
	dir := testDir(t)
	db := filepath.Join(dir, "db.sqlite")
	// The front's hold: a descriptor opened before any connection and kept
	// until after the last, through which confining reads the header.
	w, err := rawsqlite.Open(db, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		t.Fatal(err)
	}
	mustExec := func(sql string) {
		t.Helper()
		if err := w.Exec(sql); err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
	}
	// Everything stays in the -wal: a reader needs the -shm's index.
	mustExec("PRAGMA journal_mode=WAL")
	mustExec("PRAGMA wal_autocheckpoint=0")
	mustExec("CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, at TEXT DEFAULT CURRENT_TIMESTAMP)")
	mustExec("INSERT INTO notes (body, at) VALUES ('a', '2026-01-01'), ('b', '2026-01-02')")
	hold, err := os.Open(db)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { w.Close(); hold.Close() })

	env := ipc.WorkerEnv{SandboxOff: true}
	if runtime.GOOS == "linux" {
		env = ipc.WorkerEnv{Sandbox: &sandbox.Allowance{DB: db, ReadOnly: true, TempDir: testDir(t), Header: hold}}
		if _, err := sandbox.Supported(); err != nil {
			t.Logf("Landlock is not offered here (%v): the workers run with no_new_privs and limits only", err)
		}
	}
	sp, err := ipc.NewSpawner(ipc.Config{Path: workerBin, Worker: env, MaxWorkers: 2, MemoryMB: 256, Log: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sp.Close)
	run := func(mode ipc.Mode, judge bool, sql string) *ipc.Response {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		resp, err := sp.Run(ctx, &ipc.Request{
			Version: ipc.Version, Op: ipc.OpQuery, Mode: mode, DB: db, ReadOnlyFile: true,
			Judge: judge, Cluster: true, SQL: sql, Limit: 100,
			Caps:   ipc.Caps{MaxRows: 1000, MaxResultBytes: 1 << 16, MaxCellChars: 1000, MaxUpdateRows: 1000},
			Limits: ipc.Limits{TimeoutMS: 30000, MemoryMB: 256, MaxGrowthMB: 1, Sandbox: runtime.GOOS == "linux"},
		})
		if err != nil {
			t.Fatalf("%s: %v", sql, err)
		}
		return resp
	}
	count := func() string {
		t.Helper()
		resp := run(ipc.ModeRead, false, "SELECT count(*) AS n FROM notes")
		if !resp.OK {
			t.Fatalf("read: %s: %s", resp.Code, resp.Message)
		}
		return resp.Text
	}
	if runtime.GOOS == "linux" {
		// The workers are confined to the node's file.
		other := filepath.Join(dir, "other.db")
		resp, err := sp.Run(context.Background(), &ipc.Request{Version: ipc.Version, Op: ipc.OpQuery, Mode: ipc.ModeRead, DB: other, ReadOnlyFile: true, SQL: "SELECT 1",
			Limits: ipc.Limits{TimeoutMS: 30000, MemoryMB: 256, Sandbox: true}})
		if err != nil || resp.OK || !strings.Contains(resp.Message, "outside this worker's sandbox") {
			t.Fatalf("a request for another file: %v %+v", err, resp)
		}
	}
	before, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}

	if got := count(); got != "n\n2\n# 1 rows" {
		t.Fatalf("read %q", got)
	}
	// An open write transaction on the node: reads see the last commit,
	// the judge compiles beside it.
	mustExec("BEGIN IMMEDIATE")
	mustExec("INSERT INTO notes (body, at) VALUES ('c', '2026-01-03')")
	if got := count(); got != "n\n2\n# 1 rows" {
		t.Fatalf("read beside an open write: %q", got)
	}
	resp := run(ipc.ModeWrite, true, " INSERT INTO notes (body, at) VALUES ('d', '2026-12-04 10:00:00');\n")
	if !resp.OK || resp.Judgement == nil || resp.Judgement.SQL != "INSERT INTO notes (body, at) VALUES ('d', '2026-12-04 10:00:00');" || resp.Judgement.Reads {
		t.Fatalf("judge of a write: %s %s %+v", resp.Code, resp.Message, resp.Judgement)
	}
	version := resp.Judgement.SchemaVersion
	for sql, want := range map[string]string{
		"INSERT INTO notes (body) VALUES ('e')":                      "column at of notes has it as its DEFAULT",
		"UPDATE notes SET body = hex(randomblob(8)) WHERE id = 1":    "randomblob()",
		"INSERT INTO notes (body, at) VALUES ('f', datetime('now'))": "'now' reads the node's clock",
	} {
		if resp := run(ipc.ModeWrite, true, sql); resp.OK || resp.Code != errcode.Policy || !strings.Contains(resp.Message, want) {
			t.Errorf("%s: %s %s, want POLICY_VIOLATION with %q", sql, resp.Code, resp.Message, want)
		}
	}
	// A trigger's body is checked in an in-memory copy of the schema,
	// inside the sandbox too.
	if resp := run(ipc.ModeDestructive, true, "CREATE TRIGGER notes_touch AFTER UPDATE ON notes BEGIN UPDATE notes SET at = '2026-01-01' WHERE id = NEW.id; END"); !resp.OK || !resp.Judgement.Schema {
		t.Errorf("judge of a trigger: %s %s", resp.Code, resp.Message)
	}
	if resp := run(ipc.ModeDestructive, true, "CREATE TRIGGER notes_now AFTER UPDATE ON notes BEGIN UPDATE notes SET at = datetime('now') WHERE id = NEW.id; END"); resp.OK || !strings.Contains(resp.Message, "its body calls datetime()") {
		t.Errorf("judge of a trigger reading the clock: %s %s", resp.Code, resp.Message)
	}
	into := filepath.Join(dir, "copy.db")
	for _, sql := range []string{"VACUUM INTO '" + into + "'", "ATTACH '" + into + "' AS o"} {
		if resp := run(ipc.ModeDestructive, true, sql); resp.OK || resp.Code != errcode.Policy {
			t.Errorf("%s: %s %s, want POLICY_VIOLATION", sql, resp.Code, resp.Message)
		}
	}
	if _, err := os.Stat(into); !os.IsNotExist(err) {
		t.Fatalf("%s exists after the refusals: %v", into, err)
	}
	mustExec("COMMIT")
	if got := count(); got != "n\n3\n# 1 rows" {
		t.Fatalf("read after the commit: %q", got)
	}
	// A schema change on the node: the judge compiles against it and
	// reports the new schema version.
	mustExec("CREATE TABLE later (a)")
	resp = run(ipc.ModeWrite, true, "INSERT INTO later (a) VALUES (1)")
	if !resp.OK || resp.Judgement.SchemaVersion <= version {
		t.Fatalf("judge after a schema change: %s %s %+v (version before %d)", resp.Code, resp.Message, resp.Judgement, version)
	}
	// Nothing a worker did touched the file: the node writes only its WAL.
	after, err := os.Stat(db)
	if err != nil {
		t.Fatal(err)
	}
	if after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the database file changed: size %d -> %d, mtime %v -> %v", before.Size(), after.Size(), before.ModTime(), after.ModTime())
	}
}
