package rqlite_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/cluster/rqlitetest"
)

// BenchmarkExecute is one acknowledged INSERT: through a 3-node loopback
// cluster (one Raft entry, committed by a majority), and, as the
// yardstick, into a local SQLite file in WAL mode with synchronous=FULL.
//
//	go test -run '^$' -bench Execute -benchtime 2s ./cluster/rqlite
func BenchmarkExecute(b *testing.B) {
	ctx := context.Background()
	b.Run("rqlite-3-nodes", func(b *testing.B) {
		c := rqlitetest.Start(b, 3)
		client := c.Client()
		if _, err := client.Execute(ctx, []rqlite.Statement{{SQL: "CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)"}}); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := client.Execute(ctx, []rqlite.Statement{{SQL: "INSERT INTO t(id, v) VALUES(?, ?)", Args: []any{i, "a row of text"}}}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("local-sqlite", func(b *testing.B) {
		db, err := sql.Open("sqlite", "file:"+filepath.Join(b.TempDir(), "bench.db")+"?_pragma=journal_mode(WAL)&_pragma=synchronous(FULL)")
		if err != nil {
			b.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec("CREATE TABLE t(id INTEGER PRIMARY KEY, v TEXT)"); err != nil {
			b.Fatal(err)
		}
		b.ResetTimer()
		for i := range b.N {
			if _, err := db.Exec("INSERT INTO t(id, v) VALUES(?, ?)", i, "a row of text"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkClusterStart is the time rqlitetest.Start takes for 3 nodes,
// until every node knows the leader.
func BenchmarkClusterStart(b *testing.B) {
	for range b.N {
		rqlitetest.Start(b, 3)
	}
}
