package worker

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// BenchmarkExecutePointQuery is the worker's share of a read_query round
// trip: open, backstops, policy, one primary-key SELECT, CSV.
func BenchmarkExecutePointQuery(b *testing.B) {
	db := testDB(&testing.T{})
	req := request(db, ipc.OpQuery, "read", "SELECT id, name, score FROM t WHERE id = 2")
	log := hclog.NewNullLogger()
	b.ReportAllocs()
	for b.Loop() {
		if resp := execute(req, log); !resp.OK {
			b.Fatal(resp.Message)
		}
	}
}
