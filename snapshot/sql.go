package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

func execArgs(c *rawsqlite.Conn, query string, args ...any) error {
	return c.Each(query, nil, args...)
}

// scalar is the first column of query's first row as an integer; 0 when
// there is no row.
func scalar(c *rawsqlite.Conn, query string, args ...any) (int64, error) {
	var n int64
	err := c.QueryRow(query, func(st *rawsqlite.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	}, args...)
	if errors.Is(err, rawsqlite.ErrNoRows) {
		return 0, nil
	}
	return n, err
}

// copyRows runs query on src and insert on dst for every row, each value
// bound with its own storage class, so that values arrive as stored.
func copyRows(src *rawsqlite.Conn, query string, dst *rawsqlite.Conn, insert string) error {
	ins, _, err := dst.Prepare(insert)
	if err != nil {
		return err
	}
	defer ins.Finalize()
	return src.Each(query, func(st *rawsqlite.Stmt) error {
		for i := range st.ColumnCount() {
			var err error
			switch st.ColumnType(i) {
			case rawsqlite.TypeInteger:
				err = ins.BindInt64(i+1, st.ColumnInt64(i))
			case rawsqlite.TypeFloat:
				err = ins.BindDouble(i+1, st.ColumnDouble(i))
			case rawsqlite.TypeText:
				err = ins.BindText(i+1, st.ColumnText(i))
			case rawsqlite.TypeBlob:
				err = ins.BindBlob(i+1, st.ColumnBlob(i))
			default:
				err = ins.BindNull(i + 1)
			}
			if err != nil {
				return err
			}
		}
		if _, err := ins.Step(); err != nil {
			return err
		}
		return ins.Reset()
	})
}

// rowidNames are the names that reach a rowid table's rowid, unless a
// column has taken them.
var rowidNames = []string{"rowid", "_rowid_", "oid"}

// storedColumns lists the columns of table t that hold stored values (not
// generated ones) and, for a rowid table, a name that reaches its rowid.
func storedColumns(c *rawsqlite.Conn, t string) (cols []string, rowid string, err error) {
	taken := map[string]bool{}
	err = c.Each("SELECT name, hidden FROM pragma_table_xinfo(?1)", func(st *rawsqlite.Stmt) error {
		taken[rawsqlite.FoldName(st.ColumnText(0))] = true
		if st.ColumnInt64(1) == 0 {
			cols = append(cols, st.ColumnText(0))
		}
		return nil
	}, t)
	if err != nil {
		return nil, "", err
	}
	wr, err := scalar(c, "SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1", t)
	if err != nil || wr != 0 {
		return cols, "", err
	}
	for _, n := range rowidNames {
		if !taken[n] {
			return cols, n, nil
		}
	}
	return nil, "", &FullCopyNeeded{Reason: fmt.Sprintf("table %s has columns named rowid, _rowid_ and oid, so its rowids cannot be copied", t)}
}

// columnsOf lists a table's column names in order.
func columnsOf(c *rawsqlite.Conn, t string) ([]string, error) {
	var cols []string
	err := c.Each("SELECT name FROM pragma_table_info(?1)", func(st *rawsqlite.Stmt) error {
		cols = append(cols, st.ColumnText(0))
		return nil
	}, t)
	return cols, err
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
