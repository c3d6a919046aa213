package server

import (
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// TestOneCopyOfSQLite: the front links modernc's database/sql driver (the
// memory store) and rawsqlite (the chain verifier) into one process.
// SQLite keeps its connections to one file in one table per process and
// closes a descriptor only when no connection of the process holds a lock
// on the file; a second copy of SQLite in the process would keep its own
// table and, closing its connection, drop the other copy's locks
// ("How To Corrupt An SQLite Database File": multiple copies of SQLite
// linked into one application). Both must be the same
// library: closing a connection of one leaves the other's locks in place.
func TestOneCopyOfSQLite(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=journal_mode(WAL)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE t(x); INSERT INTO t VALUES (1)`); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, path + "-shm"} {
		if !heldPOSIX(t, p) {
			t.Fatalf("the driver's connection holds no lock on %s", filepath.Base(p))
		}
	}
	for range 3 {
		c, err := rawsqlite.Open(path, rawsqlite.ReadWrite)
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Exec("SELECT count(*) FROM t"); err != nil {
			t.Fatal(err)
		}
		if err := c.Close(); err != nil {
			t.Fatal(err)
		}
		for _, p := range []string{path, path + "-shm"} {
			if !heldPOSIX(t, p) {
				t.Fatalf("closing a rawsqlite connection dropped the driver's lock on %s: two copies of SQLite in one process", filepath.Base(p))
			}
		}
	}
	var n int
	if err := db.QueryRow(`SELECT count(*) FROM t`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the driver's connection after the others closed: %d, %v", n, err)
	}
}
