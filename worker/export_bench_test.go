package worker

import (
	"testing"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
)

// BenchmarkExport100k is the worker's share of a 100,000-row x 5-column CSV
// export with the caps raised: open, step, render (MB/s of CSV). The
// allocations are the result buffer and little else.
func BenchmarkExport100k(b *testing.B) {
	db := testDB(&testing.T{})
	setup := request(db, ipc.OpQuery, "write", "CREATE TABLE wide (id INTEGER PRIMARY KEY, name TEXT, price REAL, qty INTEGER, note TEXT)")
	if r := execute(setup, hclog.NewNullLogger()); !r.OK {
		b.Fatal(r.Message)
	}
	setup.SQL = `WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) INSERT INTO wide SELECT x, 'item ' || x, x * 0.37, x % 97, CASE WHEN x % 5 = 0 THEN NULL ELSE 'note, with "quotes" ' || x END FROM c`
	if r := execute(setup, hclog.NewNullLogger()); !r.OK {
		b.Fatal(r.Message)
	}
	req := request(db, ipc.OpQuery, "read", "SELECT id, name, price, qty, note FROM wide ORDER BY id")
	req.Limit, req.Caps.MaxRows, req.Caps.MaxResultBytes = 100000, 100000, 1<<30
	b.ReportAllocs()
	var size int
	for b.Loop() {
		r := execute(req, hclog.NewNullLogger())
		if !r.OK || r.Rows != 100000 {
			b.Fatal(r.Message)
		}
		size = len(r.Text)
	}
	b.SetBytes(int64(size))
}
