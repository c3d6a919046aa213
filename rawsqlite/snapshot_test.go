package rawsqlite

import "testing"

// A second connection reads exactly the state a first one's transaction
// sees, while a writer commits in between; a database not in WAL mode has
// no snapshots.
func TestSnapshot(t *testing.T) {
	count := func(t *testing.T, c *Conn) int64 {
		t.Helper()
		var n int64
		if err := c.QueryRow("SELECT count(*) FROM t", func(st *Stmt) error {
			n = st.ColumnInt64(0)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return n
	}
	open := func(t *testing.T, path string) *Conn {
		t.Helper()
		c, err := Open(path, ReadOnly)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}

	t.Run("wal", func(t *testing.T) {
		w, path := openTemp(t)
		mustExec(t, w, "PRAGMA journal_mode=WAL")
		mustExec(t, w, "CREATE TABLE t(x)")
		mustExec(t, w, "INSERT INTO t VALUES (1)")
		a, b := open(t, path), open(t, path)
		count(t, b) // SQLite learns the file is in WAL mode from a first read
		mustExec(t, a, "BEGIN")
		if n := count(t, a); n != 1 {
			t.Fatalf("a sees %d rows", n)
		}
		snap, err := a.Snapshot()
		if err != nil {
			t.Fatal(err)
		}
		mustExec(t, w, "INSERT INTO t VALUES (2)")
		mustExec(t, b, "BEGIN")
		if err := b.OpenSnapshot(snap); err != nil {
			t.Fatal(err)
		}
		snap.Free()
		snap.Free()
		if n := count(t, b); n != 1 {
			t.Errorf("b on a's snapshot sees %d rows, want 1", n)
		}
		mustExec(t, b, "ROLLBACK")
		if n := count(t, b); n != 2 {
			t.Errorf("b after its transaction sees %d rows, want 2", n)
		}
		if err := b.OpenSnapshot(snap); err == nil {
			t.Error("OpenSnapshot of a freed snapshot succeeded")
		}
	})
	t.Run("rollback journal", func(t *testing.T) {
		w, path := openTemp(t)
		mustExec(t, w, "CREATE TABLE t(x)")
		a := open(t, path)
		mustExec(t, a, "BEGIN")
		count(t, a)
		if snap, err := a.Snapshot(); err == nil {
			snap.Free()
			t.Error("Snapshot outside WAL mode succeeded")
		}
	})
}
