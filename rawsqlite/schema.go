package rawsqlite

// SchemaObject is one row of sqlite_schema: an object's type (table,
// index, view, trigger), its name, the table it belongs to (tbl_name) and
// its SQL ("" for SQLite's automatic indexes).
type SchemaObject struct {
	Type, Name, Table, SQL string
}

// SchemaQuery is the one query that reads a schema's catalogue (schema is
// "main" or an attached database's name), its rows in the order of
// SchemaObject's fields and in creation (rowid) order. [Conn.Schema] runs
// it; restore, which reads inside a database/sql transaction, runs the
// same text.
func SchemaQuery(schema string) string {
	return "SELECT type, name, tbl_name, coalesce(sql, '') FROM " + QuoteIdent(schema) + ".sqlite_schema ORDER BY rowid"
}

// Schema reads the main database's catalogue (see [SchemaQuery]).
func (c *Conn) Schema() ([]SchemaObject, error) {
	var out []SchemaObject
	err := c.Each(SchemaQuery("main"), func(st *Stmt) error {
		out = append(out, SchemaObject{Type: st.ColumnText(0), Name: st.ColumnText(1), Table: st.ColumnText(2), SQL: st.ColumnText(3)})
		return nil
	})
	return out, err
}

// SchemaRows is what [ReadSchema] needs of a query's rows: database/sql's
// *Rows has it (this package does not import database/sql, which the
// worker does not link).
type SchemaRows interface {
	Next() bool
	Scan(dest ...any) error
	Err() error
	Close() error
}

// ReadSchema reads schema's catalogue through query (for example a
// database/sql transaction's QueryContext), as [Conn.Schema] does.
func ReadSchema[R SchemaRows](query func(sql string) (R, error), schema string) ([]SchemaObject, error) {
	rows, err := query(SchemaQuery(schema))
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SchemaObject
	for rows.Next() {
		var o SchemaObject
		if err := rows.Scan(&o.Type, &o.Name, &o.Table, &o.SQL); err != nil {
			return nil, err
		}
		out = append(out, o)
	}
	return out, rows.Err()
}
