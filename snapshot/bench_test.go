package snapshot

import (
	"path/filepath"
	"testing"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// BenchmarkApply applies an honest record of a DROP TABLE (a schema step,
// 3,000 copied rows) and of a DELETE (a changeset of 3,000 rows), then
// puts the statement back, so each iteration applies one record.
func BenchmarkApply(b *testing.B) {
	for _, stmt := range []string{"DROP TABLE big", "DELETE FROM big"} {
		b.Run(stmt, func(b *testing.B) {
			dir := b.TempDir()
			db, err := openBench(filepath.Join(dir, "db.sqlite"))
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			path, _, err := record(b, db, dir, stmt)
			if err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			for range b.N {
				if _, err := Apply(db, path, Options{}); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				if err := db.Exec(stmt); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
			}
		})
	}
}

// openBench makes a database with one table of 3,000 rows and an index.
func openBench(path string) (*rawsqlite.Conn, error) {
	db, err := rawsqlite.Open(path, rawsqlite.ReadWrite|rawsqlite.Create)
	if err != nil {
		return nil, err
	}
	err = db.Exec("PRAGMA journal_mode=WAL; CREATE TABLE big(id INTEGER PRIMARY KEY, b BLOB, t TEXT); CREATE INDEX big_t ON big(t); WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO big SELECT i, randomblob(200), hex(randomblob(8)) FROM n")
	if err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}
