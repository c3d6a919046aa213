package policy

import (
	"path/filepath"
	"testing"
)

// TestReplicationTables: Litestream's tables in a replicated database are
// readable and cannot be changed by any tool, directly or from a trigger.
func TestReplicationTables(t *testing.T) {
	template := filepath.Join(t.TempDir(), "replicated.db")
	if err := buildTemplate(template, []string{
		// As Litestream v0.5 creates them.
		`CREATE TABLE _litestream_seq (id INTEGER PRIMARY KEY, seq INTEGER)`,
		`CREATE TABLE _litestream_lock (id INTEGER)`,
		`INSERT INTO _litestream_seq (id, seq) VALUES (1, 1)`,
		`CREATE TABLE notes(x)`,
		`CREATE TABLE bump(x)`,
		`CREATE TRIGGER bump_seq AFTER INSERT ON bump BEGIN UPDATE _litestream_seq SET seq = seq + 1; END`,
	}); err != nil {
		t.Fatal(err)
	}
	const msg = "Litestream, which replicates this database, keeps its state there"
	for _, c := range []policyCase{
		{name: "read", sql: `SELECT seq FROM _litestream_seq`, sel: ok, read: ok, write: ok, destr: ok},
		{name: "insert", sql: `INSERT INTO _litestream_lock (id) VALUES (1)`, sel: ro, read: pv, write: pv + ": " + msg, destr: pv + ": " + msg},
		{name: "update", sql: `UPDATE _litestream_seq SET seq = 0`, sel: ro, read: pv, write: pv, destr: pv},
		{name: "delete", sql: `DELETE FROM _litestream_seq`, sel: ro, read: pv, write: pv, destr: pv + ": DELETE on _litestream_seq"},
		{name: "drop", sql: `DROP TABLE _litestream_lock`, sel: ro, read: pv, write: pv, destr: pv + ": " + msg},
		{name: "drop, other case", sql: `DROP TABLE _LiteStream_Lock`, sel: ro, read: pv, write: pv, destr: pv},
		{name: "alter", sql: `ALTER TABLE _litestream_seq ADD COLUMN y`, sel: ro, read: pv, write: pv, destr: pv},
		{name: "index", sql: `CREATE INDEX ls_idx ON _litestream_seq(seq)`, sel: ro, read: pv, write: pv, destr: pv},
		{name: "trigger on it", sql: `CREATE TRIGGER ls_tr AFTER INSERT ON _litestream_lock BEGIN SELECT 1; END`, sel: ro, read: pv, write: pv, destr: pv},
		{name: "write through a trigger", sql: `INSERT INTO bump VALUES (1)`, sel: ro, read: ro, write: pv + ": (trigger bump_seq writes to it)", destr: pv},
		{name: "other tables unaffected", sql: `INSERT INTO notes VALUES (1)`, sel: ro, read: ro, write: ok, destr: ok},
	} {
		for m := Select; m <= Destructive; m++ {
			t.Run(c.name+"/"+m.String(), func(t *testing.T) {
				t.Parallel()
				checkCase(t, template, m, Options{}, c.sql, c.want(m), c.check)
			})
		}
	}
}

func TestIsReplicationTable(t *testing.T) {
	for name, want := range map[string]bool{
		"_litestream_seq": true, "_LITESTREAM_LOCK": true, "_litestream_anything": true,
		"litestream_seq": false, "notes": false, "memory_events": false,
	} {
		t.Run(name, func(t *testing.T) {
			if got := IsReplicationTable(name); got != want {
				t.Fatalf("IsReplicationTable(%q) = %v", name, got)
			}
		})
	}
}
