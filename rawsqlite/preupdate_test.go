package rawsqlite

import (
	"fmt"
	"slices"
	"testing"
)

func TestPreUpdateHook(t *testing.T) {
	schema := []string{
		"PRAGMA foreign_keys=ON",
		"CREATE TABLE parent(id INTEGER PRIMARY KEY, v TEXT)",
		"CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE)",
		"CREATE TABLE log(what TEXT)",
		"CREATE TRIGGER parent_log AFTER UPDATE ON parent BEGIN INSERT INTO log VALUES ('u'); END",
		"INSERT INTO parent VALUES (1,'a'),(2,'b'),(3,'c')",
		"INSERT INTO child VALUES (10,1),(11,1),(12,2)",
	}
	tests := []struct {
		name string
		sql  string
		want []string // op table depth, in order
	}{
		{"delete cascades", "DELETE FROM parent WHERE id = 1", []string{"9 parent 0", "9 child 1", "9 child 1"}},
		{"update fires the trigger", "UPDATE parent SET v = 'x' WHERE id = 3", []string{"23 parent 0", "18 log 1"}},
		{"insert", "INSERT INTO log VALUES ('i')", []string{"18 log 0"}},
		{"delete without where reports every row", "DELETE FROM child", []string{"9 child 0", "9 child 0", "9 child 0"}},
		{"replace deletes the row it replaces", "REPLACE INTO parent VALUES (2, 'z')", []string{"9 parent 0", "9 child 1", "18 parent 0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := openTemp(t)
			for _, s := range schema {
				mustExec(t, c, s)
			}
			var got []string
			if err := c.SetPreUpdateHook(func(r RowChange) {
				got = append(got, fmt.Sprintf("%d %s %d", r.Op, r.Table, r.Depth))
				if r.DB != "main" {
					t.Errorf("DB = %q, want main", r.DB)
				}
			}); err != nil {
				t.Fatal(err)
			}
			if err := runAll(c, tt.sql); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("changes = %q, want %q", got, tt.want)
			}
			got = nil
			if err := c.SetPreUpdateHook(nil); err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "INSERT INTO log VALUES ('after')")
			if got != nil {
				t.Errorf("removed hook still called: %q", got)
			}
		})
	}
}

func TestPreUpdateHookPanicIsContained(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, "CREATE TABLE t(x)")
	if err := c.SetPreUpdateHook(func(RowChange) { panic("boom") }); err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "INSERT INTO t VALUES (1)")
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.SetPreUpdateHook(nil); err == nil {
		t.Error("SetPreUpdateHook on a closed connection: no error")
	}
}
