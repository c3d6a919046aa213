package restore

import (
	"context"
	"database/sql"
	"fmt"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/snapshot"
)

// querier is what the catalogue and the plan read through: the restore's
// transaction, or a connection of its own.
type querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// object is one row of a schema's sqlite_schema.
type object struct {
	typ, name, tbl, sql string
	// list is the table's type in PRAGMA table_list (table, virtual,
	// shadow, view); "" for indexes and triggers.
	list         string
	withoutRowid bool
	server       bool
}

func (o object) label() string { return o.typ + " " + o.name }

// catalog is one schema ("main" or the attached snapshot) in creation
// order.
type catalog struct {
	schema string
	objs   []object
	names  map[string]bool // every name, sqlite_* included, folded
}

// readCatalog reads schema's objects and marks the server's: those
// snapshot.IsServerObject names (the server's tables, view and full-text
// indexes, and what is attached to them), and the shadow tables of a
// server virtual table.
func readCatalog(ctx context.Context, q querier, schema string) (*catalog, error) {
	c := &catalog{schema: schema, names: map[string]bool{}}
	list := map[string]object{}
	rows, err := q.QueryContext(ctx, "PRAGMA "+rawsqlite.QuoteIdent(schema)+".table_list")
	if err != nil {
		return nil, fmt.Errorf("read the tables of %s: %w", schema, err)
	}
	for rows.Next() {
		var sch, name, typ string
		var ncol, wr, strict int64
		if err := rows.Scan(&sch, &name, &typ, &ncol, &wr, &strict); err != nil {
			rows.Close()
			return nil, err
		}
		list[rawsqlite.FoldName(name)] = object{list: typ, withoutRowid: wr != 0}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, err
	}
	schemaObjs, err := rawsqlite.ReadSchema(func(text string) (*sql.Rows, error) { return q.QueryContext(ctx, text) }, schema)
	if err != nil {
		return nil, fmt.Errorf("read the schema of %s: %w", schema, err)
	}
	for _, so := range schemaObjs {
		o := object{typ: so.Type, name: so.Name, tbl: so.Table, sql: so.SQL}
		c.names[rawsqlite.FoldName(o.name)] = true
		if hasSQLitePrefix(o.name) {
			continue // SQLite's own: sqlite_sequence, sqlite_stat*, autoindexes
		}
		if l, ok := list[rawsqlite.FoldName(o.name)]; ok && (o.typ == "table" || o.typ == "view") {
			o.list, o.withoutRowid = l.list, l.withoutRowid
		}
		o.server = snapshot.IsServerObject(o.name, o.tbl)
		c.objs = append(c.objs, o)
	}
	for i, o := range c.objs {
		if o.list == "shadow" {
			if owner, ok := c.owner(o.name); ok && owner.server {
				c.objs[i].server = true
			}
		}
	}
	return c, nil
}

// owner is the virtual table whose shadow table name is: the longest
// virtual table name that name starts with, followed by "_".
func (c *catalog) owner(name string) (object, bool) {
	n := rawsqlite.FoldName(name)
	var best object
	found := false
	for _, o := range c.objs {
		if o.list != "virtual" {
			continue
		}
		p := rawsqlite.FoldName(o.name) + "_"
		if strings.HasPrefix(n, p) && (!found || len(o.name) > len(best.name)) {
			best, found = o, true
		}
	}
	return best, found
}

// agent returns the agent's objects of type typ ("" for all), in creation
// order.
func (c *catalog) agent(typ string) []object {
	var out []object
	for _, o := range c.objs {
		if !o.server && (typ == "" || o.typ == typ) {
			out = append(out, o)
		}
	}
	return out
}

// find returns the object named name (any type).
func (c *catalog) find(name string) (object, bool) {
	for _, o := range c.objs {
		if rawsqlite.SameName(o.name, name) {
			return o, true
		}
	}
	return object{}, false
}

// has reports whether the schema has a table named name, SQLite's own
// included.
func (c *catalog) has(name string) bool { return c.names[rawsqlite.FoldName(name)] }

func hasSQLitePrefix(name string) bool {
	return len(name) >= 7 && rawsqlite.FoldName(name[:7]) == "sqlite_"
}

// count is the number of rows of schema.name.
func count(ctx context.Context, q querier, schema, name string) (int64, error) {
	var n int64
	err := q.QueryRowContext(ctx, "SELECT count(*) FROM "+rawsqlite.QuoteIdent(schema)+"."+rawsqlite.QuoteIdent(name)).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("count the rows of %s: %w", name, err)
	}
	return n, nil
}
