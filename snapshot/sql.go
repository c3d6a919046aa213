package snapshot

import (
	"errors"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// each runs query on c with args bound and calls fn for every row.
func each(c *rawsqlite.Conn, query string, fn func(*rawsqlite.Stmt) error, args ...any) error {
	st, _, err := c.Prepare(query)
	if err != nil {
		return err
	}
	if st == nil {
		return errors.New("undo: empty statement")
	}
	defer st.Finalize()
	if err := bind(st, args); err != nil {
		return err
	}
	for {
		row, err := st.Step()
		if err != nil || !row {
			return err
		}
		if err := fn(st); err != nil {
			return err
		}
	}
}

func execArgs(c *rawsqlite.Conn, query string, args ...any) error {
	return each(c, query, func(*rawsqlite.Stmt) error { return nil }, args...)
}

func scalar(c *rawsqlite.Conn, query string, args ...any) (int64, error) {
	var n int64
	err := each(c, query, func(st *rawsqlite.Stmt) error {
		n = st.ColumnInt64(0)
		return nil
	}, args...)
	return n, err
}

func bind(st *rawsqlite.Stmt, args []any) error {
	for i, a := range args {
		var err error
		switch v := a.(type) {
		case nil:
			err = st.BindNull(i + 1)
		case string:
			err = st.BindText(i+1, v)
		case int64:
			err = st.BindInt64(i+1, v)
		case int:
			err = st.BindInt64(i+1, int64(v))
		case []byte:
			err = st.BindBlob(i+1, v)
		default:
			err = fmt.Errorf("undo: cannot bind %T", a)
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// copyRows runs query on src and insert on dst for every row, each value
// bound with its own storage class, so that values arrive as stored.
func copyRows(src *rawsqlite.Conn, query string, dst *rawsqlite.Conn, insert string) error {
	ins, _, err := dst.Prepare(insert)
	if err != nil {
		return err
	}
	defer ins.Finalize()
	return each(src, query, func(st *rawsqlite.Stmt) error {
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
	err = each(c, "SELECT name, hidden FROM pragma_table_xinfo(?1)", func(st *rawsqlite.Stmt) error {
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
	err := each(c, "SELECT name FROM pragma_table_info(?1)", func(st *rawsqlite.Stmt) error {
		cols = append(cols, st.ColumnText(0))
		return nil
	}, t)
	return cols, err
}

func placeholders(n int) string {
	return strings.TrimSuffix(strings.Repeat("?,", n), ",")
}
