package worker

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/errcode"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/render"
)

// object is one row of the schema catalogue.
type object struct {
	typ, name, table, sql string
	shadow, system        bool
}

// objects lists the schema in creation order, flagging server objects (the
// protected tables and everything attached to them) and FTS/R*Tree shadow
// tables.
func (ex *executor) objects() ([]object, error) {
	shadow, err := ex.shadowTables()
	if err != nil {
		return nil, err
	}
	rows, err := ex.conn.Schema()
	if err != nil {
		return nil, err
	}
	objs := make([]object, 0, len(rows))
	for _, r := range rows {
		o := object{typ: r.Type, name: r.Name, table: r.Table, sql: r.SQL}
		o.shadow = shadow[rawsqlite.FoldName(o.name)]
		o.system = policy.IsServerObject(o.name, o.table)
		objs = append(objs, o)
	}
	return objs, nil
}

// listTables answers list_tables: CSV name,type,system,rows, or the
// readonly profile's {"tables":[{"name":...}]}.
func (ex *executor) listTables() (*ipc.Response, error) {
	objs, err := ex.objects()
	if err != nil {
		return nil, err
	}
	opt := ex.req.Table
	if opt == nil {
		opt = &ipc.Table{}
	}
	if opt.JSON {
		type entry struct {
			Name string `json:"name"`
		}
		doc := struct {
			Tables []entry `json:"tables"`
		}{Tables: []entry{}}
		for _, o := range objs {
			if o.typ == "table" && !o.shadow && !strings.HasPrefix(strings.ToLower(o.name), "sqlite_") {
				doc.Tables = append(doc.Tables, entry{o.name})
			}
		}
		return jsonResponse(doc, int64(len(doc.Tables)))
	}
	var b []byte
	b = render.AppendRecord(b, []string{"name", "type", "system", "rows"}, false)
	var n int64
	for _, o := range objs {
		if (o.typ != "table" && o.typ != "view") || o.shadow || strings.HasPrefix(strings.ToLower(o.name), "sqlite_") {
			continue
		}
		if policy.IsHidden(o.name) {
			continue // the memory's full-text indexes (the instructions name them) and vectors
		}
		rows := ""
		// Views are not counted: counting one runs it, which may be slow.
		if opt.RowCounts && o.typ == "table" {
			c, err := ex.countRows(o.name)
			if err != nil {
				return nil, err
			}
			rows = strconv.FormatInt(c, 10)
		}
		system := "0"
		if o.system {
			system = "1"
		}
		typ := o.typ
		if o.typ == "table" && strings.HasPrefix(strings.ToUpper(o.sql), "CREATE VIRTUAL TABLE") {
			typ = "virtual table"
		}
		b = render.AppendRecord(b, []string{o.name, typ, system, rows}, false)
		n++
	}
	b = fmt.Appendf(b, "# %d rows", n)
	return &ipc.Response{Text: string(b), Rows: n}, nil
}

// countRows counts under the read policy, like an agent's own query.
func (ex *executor) countRows(table string) (int64, error) {
	st, _, err := ex.compile("SELECT count(*) FROM " + rawsqlite.QuoteIdent(table))
	if err != nil {
		return 0, err
	}
	defer st.Finalize()
	if _, err := ex.stepAgent(st); err != nil {
		return 0, err
	}
	return st.ColumnInt64(0), nil
}

// findTable resolves an agent-given name to a table or view, exactly as
// stored, or reports TABLE_NOT_FOUND.
func (ex *executor) findTable(name string) (object, error) {
	objs, err := ex.objects()
	if err != nil {
		return object{}, err
	}
	for _, o := range objs {
		if (o.typ == "table" || o.typ == "view") && rawsqlite.SameName(o.name, name) {
			return o, nil
		}
	}
	if ex.req.Table != nil && ex.req.Table.JSON {
		return object{}, errcode.New(errcode.TableNotFound, fmt.Sprintf("Table %q does not exist.", name))
	}
	return object{}, errcode.New(errcode.TableNotFound, fmt.Sprintf("no table or view named %q; call list_tables to see the names", name))
}

type column struct {
	cid              int64
	name, typ, deflt string
	notNull          bool
	hasDefault       bool
	pk               int64
}

type foreignKey struct{ from, table, to string }

func (ex *executor) columns(table string) ([]column, error) {
	var cols []column
	err := ex.each("SELECT cid, name, type, \"notnull\", dflt_value, pk FROM pragma_table_info(?1)", func(st *rawsqlite.Stmt) error {
		cols = append(cols, column{
			cid: st.ColumnInt64(0), name: st.ColumnText(1), typ: st.ColumnText(2),
			notNull: st.ColumnInt64(3) != 0, deflt: st.ColumnText(4),
			hasDefault: st.ColumnType(4) != rawsqlite.TypeNull, pk: st.ColumnInt64(5),
		})
		return nil
	}, table)
	return cols, err
}

func (ex *executor) foreignKeys(table string) ([]foreignKey, error) {
	var fks []foreignKey
	// SQLite numbers foreign keys last-declared first.
	err := ex.each("SELECT \"from\", \"table\", coalesce(\"to\", '') FROM pragma_foreign_key_list(?1) ORDER BY id DESC, seq", func(st *rawsqlite.Stmt) error {
		fks = append(fks, foreignKey{st.ColumnText(0), st.ColumnText(1), st.ColumnText(2)})
		return nil
	}, table)
	if err != nil {
		return nil, err
	}
	// A REFERENCES clause without a column points at the primary key.
	for i, fk := range fks {
		if fk.to != "" {
			continue
		}
		cols, err := ex.columns(fk.table)
		if err != nil {
			return nil, err
		}
		for _, c := range cols {
			if c.pk == 1 {
				fks[i].to = c.name
			}
		}
	}
	return fks, nil
}

// describeTable answers describe_table in CSV sections or the readonly
// profile's JSON.
func (ex *executor) describeTable() (*ipc.Response, error) {
	if ex.req.Table == nil || ex.req.Table.Name == "" {
		return nil, errcode.New(errcode.InvalidArgument, "table is required")
	}
	o, err := ex.findTable(ex.req.Table.Name)
	if err != nil {
		return nil, err
	}
	cols, err := ex.columns(o.name)
	if err != nil {
		return nil, err
	}
	fks, err := ex.foreignKeys(o.name)
	if err != nil {
		return nil, err
	}
	if ex.req.Table.JSON {
		return describeJSON(o, cols, fks)
	}
	var b []byte
	b = append(b, "# columns\n"...)
	b = render.AppendRecord(b, []string{"cid", "name", "type", "notnull", "default", "pk"}, false)
	for _, c := range cols {
		b = render.AppendRecord(b, []string{strconv.FormatInt(c.cid, 10), c.name, c.typ, boolDigit(c.notNull), c.deflt, strconv.FormatInt(c.pk, 10)}, false)
	}
	b = append(b, "\n# foreign_keys\n"...)
	b = render.AppendRecord(b, []string{"from", "to_table", "to_column"}, false)
	for _, fk := range fks {
		b = render.AppendRecord(b, []string{fk.from, fk.table, fk.to}, false)
	}
	b = append(b, "\n# indexes\n"...)
	b = render.AppendRecord(b, []string{"name", "unique", "origin", "columns"}, false)
	type index struct{ name, unique, origin string }
	var idx []index
	err = ex.each("SELECT name, \"unique\", origin FROM pragma_index_list(?1) ORDER BY seq DESC", func(st *rawsqlite.Stmt) error {
		idx = append(idx, index{st.ColumnText(0), st.ColumnText(1), st.ColumnText(2)})
		return nil
	}, o.name)
	if err != nil {
		return nil, err
	}
	for _, ix := range idx {
		var names []string
		err := ex.each("SELECT coalesce(name, '<expr>') FROM pragma_index_info(?1) ORDER BY seqno", func(st *rawsqlite.Stmt) error {
			names = append(names, st.ColumnText(0))
			return nil
		}, ix.name)
		if err != nil {
			return nil, err
		}
		b = render.AppendRecord(b, []string{ix.name, ix.unique, ix.origin, strings.Join(names, " ")}, false)
	}
	return &ipc.Response{Text: strings.TrimSuffix(string(b), "\n"), Rows: int64(len(cols))}, nil
}

func boolDigit(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

func describeJSON(o object, cols []column, fks []foreignKey) (*ipc.Response, error) {
	type col struct {
		Name       string `json:"name"`
		Type       string `json:"type"`
		Nullable   bool   `json:"nullable"`
		PrimaryKey bool   `json:"primaryKey"`
	}
	type fk struct {
		Column           string `json:"column"`
		ReferencesTable  string `json:"referencesTable"`
		ReferencesColumn string `json:"referencesColumn"`
	}
	doc := struct {
		Table       string `json:"table"`
		Columns     []col  `json:"columns"`
		ForeignKeys []fk   `json:"foreignKeys"`
	}{Table: o.name, Columns: []col{}, ForeignKeys: []fk{}}
	pkCols := 0
	for _, c := range cols {
		if c.pk > 0 {
			pkCols++
		}
	}
	withoutRowid := strings.Contains(strings.ToUpper(o.sql), "WITHOUT ROWID")
	for _, c := range cols {
		// An INTEGER PRIMARY KEY is the rowid and never NULL; so are the
		// key columns of a WITHOUT ROWID table. Other key columns of a
		// rowid table may hold NULL in SQLite unless declared NOT NULL.
		rowidAlias := c.pk > 0 && pkCols == 1 && strings.EqualFold(c.typ, "INTEGER")
		nullable := !c.notNull && !rowidAlias && !(c.pk > 0 && withoutRowid)
		doc.Columns = append(doc.Columns, col{c.name, c.typ, nullable, c.pk > 0})
	}
	for _, f := range fks {
		doc.ForeignKeys = append(doc.ForeignKeys, fk{f.from, f.table, f.to})
	}
	return jsonResponse(doc, int64(len(cols)))
}

func jsonResponse(doc any, rows int64) (*ipc.Response, error) {
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, err
	}
	return &ipc.Response{Text: string(b), JSON: b, Rows: rows}, nil
}

// schema answers get_schema: every CREATE statement as stored, tables,
// indexes, views, triggers in that order, as a script that sqlite3 replays
// into the same schema. Tables SQLite makes itself cannot be created by a
// statement, so they are printed the way the replay gets them: the
// AUTOINCREMENT counters (sqlite_sequence) and the shadow tables of a
// virtual table come with the statements that make them and are shown as
// comments; ANALYZE's tables (sqlite_stat1, sqlite_stat4) become one
// `ANALYZE sqlite_schema;`, as sqlite3's .dump writes it.
func (ex *executor) schema() (*ipc.Response, error) {
	objs, err := ex.objects()
	if err != nil {
		return nil, err
	}
	all := ex.req.Table != nil && ex.req.Table.IncludeSystem
	var shown []object
	hidden := 0
	for _, kind := range []string{"table", "index", "view", "trigger"} {
		for _, o := range objs {
			if o.typ != kind || o.sql == "" {
				continue
			}
			if (o.system || o.shadow) && !all {
				hidden++
				continue
			}
			shown = append(shown, o)
		}
	}
	var b strings.Builder
	if all {
		fmt.Fprintf(&b, "-- %d objects\n", len(shown))
	} else {
		// SPEC 5's header counts shadow tables among the server objects.
		fmt.Fprintf(&b, "-- %d objects (%d server objects hidden; include_system=true shows them)\n", len(shown), hidden)
	}
	analyzed := false
	for _, o := range shown {
		b.WriteString("\n")
		switch name := strings.ToLower(o.name); {
		case o.typ == "table" && name == "sqlite_sequence":
			b.WriteString("-- SQLite's AUTOINCREMENT counters, made with the first AUTOINCREMENT table:\n")
			b.WriteString(commentedOut(o.sql))
		case o.typ == "table" && strings.HasPrefix(name, "sqlite_stat"):
			if !analyzed {
				b.WriteString("-- ANALYZE's statistics tables (sqlite_stat1, and sqlite_stat4 where SQLite has it), made empty:\nANALYZE sqlite_schema;\n")
				analyzed = true
			}
			b.WriteString(commentedOut(o.sql))
		case o.shadow:
			b.WriteString("-- a shadow table, made by its virtual table's CREATE VIRTUAL TABLE:\n")
			b.WriteString(commentedOut(o.sql))
		default:
			b.WriteString(terminated(o.sql))
		}
		b.WriteString("\n")
	}
	return &ipc.Response{Text: strings.TrimSuffix(b.String(), "\n"), Rows: int64(len(shown))}, nil
}

// commentedOut prints a statement SQLite makes itself as -- lines, so that
// a replay shows it without running it.
func commentedOut(sql string) string {
	return "-- " + strings.ReplaceAll(strings.ReplaceAll(sql, "\r", ""), "\n", "\n-- ") + ";"
}

// terminated ends a stored CREATE statement with a ';' that sqlite3 sees,
// so that get_schema's output replays into the same schema. SQLite stores
// a comment that follows the last token of a view or an index: after a --
// comment the ';' goes on a line of its own (views are stored without
// trailing white space, so the replay stores the same text; the worker
// ends an agent statement that stops inside a -- comment with a line
// break, so indexes keep it). A /* comment that never closes, which no tool
// stores any more, is closed, the one change a replay makes to such text.
func terminated(sql string) string {
	switch {
	case !strings.Contains(sql, "--") && !strings.Contains(sql, "/*"), rawsqlite.Complete(sql + ";"):
		return sql + ";"
	case rawsqlite.Complete(sql + "\n;"):
		return sql + "\n;"
	}
	return sql + " */;"
}
