package worker

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/sandbox"
)

// TestAdmit checks requests against the allowance a worker was started
// with (the confinement itself is tested in package sandbox and tests/).
func TestAdmit(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "m.db")
	snaps := filepath.Join(dir, "m.snapshots")
	saved := sandboxState
	t.Cleanup(func() { sandboxState = saved })
	sandboxState = &sandbox.State{Allowance: &sandbox.Allowance{DB: db, SnapshotDir: snaps}}

	cases := []struct {
		name string
		req  ipc.Request
		ok   bool
	}{
		{"same database", ipc.Request{DB: db}, true},
		{"same database, snapshot", ipc.Request{DB: db, Snapshot: &ipc.Snapshot{Dir: snaps, Keep: 5}}, true},
		{"snapshots disabled", ipc.Request{DB: db, Snapshot: &ipc.Snapshot{Dir: "/elsewhere", Keep: 0}}, true},
		{"other database", ipc.Request{DB: filepath.Join(dir, "other.db")}, false},
		{"other snapshot folder", ipc.Request{DB: db, Snapshot: &ipc.Snapshot{Dir: dir, Keep: 1}}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := admit(&c.req, "", hclog.NewNullLogger())
			if (err == nil) != c.ok {
				t.Fatalf("admit = %v, want ok=%v", err, c.ok)
			}
			if err != nil && (errcode.Of(err) != errcode.WorkerFailed || !strings.Contains(err.Error(), "outside this worker's sandbox")) {
				t.Fatalf("refusal: %v", err)
			}
		})
	}
}

// TestAdmitUnconfined: with --sandbox off, or a standalone request that
// does not ask for the sandbox, any database is admitted.
func TestAdmitUnconfined(t *testing.T) {
	saved := sandboxState
	t.Cleanup(func() { sandboxState = saved })
	for _, st := range []*sandbox.State{{Off: true}, {}} {
		sandboxState = st
		req := &ipc.Request{DB: "/anywhere.db", Limits: ipc.Limits{Sandbox: st.Off}}
		if err := admit(req, "", hclog.NewNullLogger()); err != nil {
			t.Fatalf("state %+v: %v", st, err)
		}
	}
}
