package rawsqlite

import (
	"fmt"
	"strings"
	"testing"
)

// dump lists every row of the tables, in key order, as text.
func dump(t *testing.T, c *Conn, tables ...string) string {
	t.Helper()
	var b strings.Builder
	for _, tbl := range tables {
		err := c.Each("SELECT * FROM "+tbl+" ORDER BY 1, 2", func(st *Stmt) error {
			fmt.Fprintf(&b, "%s:", tbl)
			for i := range st.ColumnCount() {
				switch st.ColumnType(i) {
				case TypeNull:
					b.WriteString(" NULL")
				case TypeBlob:
					fmt.Fprintf(&b, " x'%x'", st.ColumnBlob(i))
				default:
					fmt.Fprintf(&b, " %d:%s", st.ColumnType(i), st.ColumnText(i))
				}
			}
			b.WriteByte('\n')
			return nil
		})
		if err != nil {
			t.Fatalf("dump %s: %v", tbl, err)
		}
	}
	return b.String()
}

// TestSessionUndo records a statement in a session, inverts the changeset
// and applies it: the rows end as they were, also those that triggers and
// foreign-key cascades changed, in tables without a declared key and
// WITHOUT ROWID tables.
func TestSessionUndo(t *testing.T) {
	setup := `PRAGMA foreign_keys=ON;
CREATE TABLE parent(id INTEGER PRIMARY KEY, name TEXT);
CREATE TABLE child(id INTEGER PRIMARY KEY, pid INTEGER REFERENCES parent(id) ON DELETE CASCADE, v BLOB);
CREATE TABLE nokey(a, b);
CREATE TABLE wr(k TEXT PRIMARY KEY, v REAL) WITHOUT ROWID;
CREATE TABLE log(id INTEGER PRIMARY KEY, what TEXT);
CREATE TRIGGER wr_del AFTER DELETE ON wr BEGIN INSERT INTO log(what) VALUES ('deleted ' || old.k); END;
INSERT INTO parent VALUES (1, 'one'), (2, 'two'), (3, NULL);
INSERT INTO child VALUES (10, 1, x'00ff'), (11, 1, NULL), (12, 2, x'');
INSERT INTO nokey VALUES (1, 'a'), (1, 'a'), (NULL, 2.5);
INSERT INTO wr VALUES ('x', 1.5), ('y', NULL);`
	tables := []string{"parent", "child", "nokey", "wr", "log"}
	for _, stmt := range []string{
		"DELETE FROM parent WHERE id = 1",
		"UPDATE parent SET name = 'same'",
		"DELETE FROM nokey WHERE a = 1",
		"UPDATE nokey SET b = NULL",
		"DELETE FROM wr WHERE k = 'x'",
		"UPDATE child SET v = x'0102'",
	} {
		t.Run(stmt, func(t *testing.T) {
			c, _ := openTemp(t)
			mustExec(t, c, setup)
			before := dump(t, c, tables...)
			s, err := c.NewSession(nil)
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "BEGIN; "+stmt+"; COMMIT")
			cs, err := s.Changeset()
			s.Delete()
			if err != nil || len(cs) == 0 {
				t.Fatalf("changeset: %d bytes, %v", len(cs), err)
			}
			if dump(t, c, tables...) == before {
				t.Fatal("the statement changed nothing")
			}
			inv, err := InvertChangeset(cs)
			if err != nil {
				t.Fatal(err)
			}
			mustExec(t, c, "PRAGMA foreign_keys=OFF")
			if _, err := c.DBConfig(ConfigEnableTrigger, false); err != nil {
				t.Fatal(err)
			}
			if err := c.ApplyChangeset(inv, func(kind int, ch Change) int {
				t.Errorf("conflict %d on %s", kind, ch.Table)
				return ConflictAbort
			}); err != nil {
				t.Fatal(err)
			}
			if got := dump(t, c, tables...); got != before {
				t.Fatalf("after the undo:\n%s\nwant:\n%s", got, before)
			}
		})
	}
}

// TestSessionFilterAndConflicts: a filtered table is not recorded; an undo
// whose rows were changed since reports each conflict with the row as it
// is now, and a REPLACE answer overwrites it.
func TestSessionFilterAndConflicts(t *testing.T) {
	c, _ := openTemp(t)
	mustExec(t, c, `CREATE TABLE a(id INTEGER PRIMARY KEY, v TEXT); CREATE TABLE b(id INTEGER PRIMARY KEY, v TEXT);
INSERT INTO a VALUES (1, 'x'), (2, 'y'); INSERT INTO b VALUES (1, 'x');`)
	s, err := c.NewSession(func(table string) bool { return table != "b" })
	if err != nil {
		t.Fatal(err)
	}
	mustExec(t, c, "UPDATE a SET v = 'z'; DELETE FROM b")
	cs, err := s.Changeset()
	s.Delete()
	if err != nil {
		t.Fatal(err)
	}
	var seen []string
	if err := EachChange(cs, func(ch Change) error {
		seen = append(seen, fmt.Sprintf("%s %d pk=%v old=%s new=%s", ch.Table, ch.Op, ch.PK, ch.Old[1].Bytes, ch.New[1].Bytes))
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := "a 23 pk=[true false] old=x new=z|a 23 pk=[true false] old=y new=z"; strings.Join(seen, "|") != want {
		t.Fatalf("changes = %q, want %q", strings.Join(seen, "|"), want)
	}
	inv, _ := InvertChangeset(cs)
	mustExec(t, c, "UPDATE a SET v = 'later' WHERE id = 2")
	var conflicts []string
	err = c.ApplyChangeset(inv, func(kind int, ch Change) int {
		conflicts = append(conflicts, fmt.Sprintf("%d %s id=%d now=%s", kind, ch.Table, ch.Old[0].Int, ch.Conflict[1].Bytes))
		return ConflictAbort
	})
	if err == nil || len(conflicts) != 1 || conflicts[0] != fmt.Sprintf("%d a id=2 now=later", ConflictData) {
		t.Fatalf("apply = %v, conflicts %q", err, conflicts)
	}
	if got := dump(t, c, "a"); got != "a: 1:1 3:z\na: 1:2 3:later\n" {
		t.Fatalf("an aborted apply changed rows:\n%s", got)
	}
	if err := c.ApplyChangeset(inv, func(int, Change) int { return ConflictReplace }); err != nil {
		t.Fatal(err)
	}
	if got := dump(t, c, "a"); got != "a: 1:1 3:x\na: 1:2 3:y\n" {
		t.Fatalf("after a forced apply:\n%s", got)
	}
}
