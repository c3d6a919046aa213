package worker

import (
	"bytes"
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// TestMemoryAlert: a statement whose SQLite memory reaches the mark, or
// the heap limit, makes the worker write one memory alert frame before
// its response; a small statement and a request without a budget get
// none. The OS limit is not applied
// here (it would bound the test binary): the heap limit is set as
// applyMemoryLimit sets it.
func TestMemoryAlert(t *testing.T) {
	const budgetMB = 64
	const mark = budgetMB << 20 / 16
	old := rawsqlite.SetHardHeapLimit(heapLimit(budgetMB << 20))
	defer rawsqlite.SetHardHeapLimit(old)
	const endless = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) "
	tests := []struct {
		name     string
		memoryMB int
		sql      string
		wantCode errcode.Code // "": an OK answer
		wantUsed int64        // the least Done of the alert; -1: no alert
	}{
		{"group_concat bomb", budgetMB, endless + "SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c", errcode.ResourceLimit, mark},
		{"json_group_array bomb", budgetMB, endless + "SELECT length(json_group_array(printf('%.1000c', 'x'))) FROM c", errcode.ResourceLimit, mark},
		// Past the mark and within the limit: the alert is written, and
		// the answer follows it as usual.
		{"past the mark, within the limit", budgetMB, "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 20000) SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c", "", mark},
		// One value over the heap limit fails inside one instruction,
		// between two checks of the watch: the alert comes at the limit.
		{"one huge value", budgetMB, "SELECT length(printf('%.60000000c', 'x'))", errcode.ResourceLimit, 0},
		{"small statement", budgetMB, "SELECT count(*) FROM t", "", -1},
		{"no budget", 0, endless + "SELECT length(group_concat(printf('%.1000c', 'x'))) FROM c", errcode.ResourceLimit, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := request(testDB(t), ipc.OpQuery, "read", tt.sql)
			req.Limits.MemoryMB = tt.memoryMB
			// As ipc.Serve writes them: frames, then the response.
			var out bytes.Buffer
			resp := executeTo(req, hclog.NewNullLogger(), &out)
			if tt.wantCode == "" && !resp.OK || tt.wantCode != "" && resp.Code != tt.wantCode {
				t.Fatalf("got %s %q, want %q", resp.Code, resp.Message, tt.wantCode)
			}
			resp.Version = ipc.Version
			if err := ipc.WriteResponse(&out, resp); err != nil {
				t.Fatal(err)
			}
			var alerts []ipc.Progress
			got, err := ipc.ReadResponseProgress(&out, func(p ipc.Progress) {
				if p.Phase == ipc.PhaseMemoryHigh {
					alerts = append(alerts, p)
				}
			})
			if err != nil || got.Code != resp.Code {
				t.Fatalf("read back %+v, %v", got, err)
			}
			switch {
			case tt.wantUsed < 0 && len(alerts) != 0:
				t.Fatalf("alerts %+v, want none", alerts)
			case tt.wantUsed >= 0 && (len(alerts) != 1 || alerts[0].Done < tt.wantUsed || alerts[0].Total != budgetMB<<20):
				t.Fatalf("alerts %+v, want one with done >= %d, total %d", alerts, tt.wantUsed, budgetMB<<20)
			}
		})
	}
}
