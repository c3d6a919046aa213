package worker

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// BenchmarkDryRun measures the dry run of a confirmed destructive_query
// (SPEC 10: at most 2x the statement alone, on a 100k-row table) against
// the statement alone (snapshots off, so only the statement is timed), in
// the same loop: each iteration runs both, and the ratio of their total
// times is reported. The table is refilled before each run, untimed.
func BenchmarkDryRun(b *testing.B) {
	cases := []struct{ name, sql string }{
		{"update-all", "UPDATE orders SET total = total + 1"},
		{"delete-half-with-cascade", "DELETE FROM orders WHERE id % 2 = 0"},
		{"delete-all", "DELETE FROM notes"},
	}
	for _, tc := range cases {
		b.Run(tc.name, func(b *testing.B) {
			db := filepath.Join(b.TempDir(), "bench.db")
			c, err := rawsqlite.Open(db, rawsqlite.ReadWrite|rawsqlite.Create)
			if err != nil {
				b.Fatal(err)
			}
			defer c.Close()
			fill := []string{
				"DELETE FROM order_items", "DELETE FROM orders", "DELETE FROM notes",
				"WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 100000) INSERT INTO orders SELECT x, x % 977, x * 0.25, 'order ' || x FROM c",
				"INSERT INTO order_items SELECT id, id, 1 FROM orders WHERE id % 10 = 0",
				"INSERT INTO notes SELECT id, note FROM orders",
				"VACUUM", "PRAGMA wal_checkpoint(TRUNCATE)",
			}
			for _, sql := range append([]string{
				"PRAGMA journal_mode=WAL", "PRAGMA foreign_keys=ON",
				"CREATE TABLE orders (id INTEGER PRIMARY KEY, customer INTEGER, total REAL, note TEXT)",
				"CREATE TABLE order_items (id INTEGER PRIMARY KEY, order_id INTEGER REFERENCES orders(id) ON DELETE CASCADE, qty INTEGER)",
				"CREATE INDEX order_items_order ON order_items(order_id)",
				"CREATE TABLE notes (id INTEGER PRIMARY KEY, text TEXT)",
			}, fill...) {
				if err := c.Exec(sql); err != nil {
					b.Fatalf("%s: %v", sql, err)
				}
			}
			log := hclog.NewNullLogger()
			stmt := request(db, ipc.OpQuery, "destructive", tc.sql)
			stmt.Limits.TimeoutMS = 60_000
			dry := request(db, ipc.OpQuery, "destructive", tc.sql)
			dry.Limits.TimeoutMS = 60_000
			dry.Preview = &ipc.PreviewRequest{}
			// Each run comes after a refill, untimed, that ends in a VACUUM:
			// both runs find the same file layout and a warm process (the
			// first statement to read a freshly written table in this
			// process pays about 15 ms more at 100k rows, whichever it is;
			// a fresh worker pays it for both runs). Without that, the dry
			// run always paid it and DELETE without WHERE read 2.2x at a
			// true 0.75x.
			refill := func() {
				b.StopTimer()
				for _, sql := range fill {
					if err := c.Exec(sql); err != nil {
						b.Fatal(err)
					}
				}
				b.StartTimer()
			}
			var statement, dryRun time.Duration
			for b.Loop() {
				refill()
				start := time.Now()
				if r := execute(dry, log); !r.OK || r.Preview == nil {
					b.Fatalf("dry run: %s %s", r.Code, r.Message)
				}
				dryRun += time.Since(start)
				refill()
				start = time.Now()
				if r := execute(stmt, log); !r.OK {
					b.Fatalf("statement: %s %s", r.Code, r.Message)
				}
				statement += time.Since(start)
			}
			b.ReportMetric(float64(statement.Milliseconds())/float64(b.N), "statement-ms")
			b.ReportMetric(float64(dryRun.Milliseconds())/float64(b.N), "dry-run-ms")
			b.ReportMetric(float64(dryRun)/float64(statement), "dry/statement")
		})
	}
}
