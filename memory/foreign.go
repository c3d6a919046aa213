package memory

import (
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// The server tables defend themselves (SPEC 5.6). The append-only triggers
// refuse UPDATE and DELETE, and every append checks its own row
// (checkStored); what they cannot see is an object another program added
// to the schema that runs inside the server's own writes: a trigger that
// fires on an insert into memory_events and drops it (RAISE(IGNORE)),
// rewrites it, or writes the server tables from a trigger on a table of
// the agent's. At start the server therefore refuses a schema in which an
// object it did not create references its tables.
//
// "References" is judged by SQLite's own parser, not by reading the SQL
// text (which quoting, comments, schema prefixes and case can dress up):
// for every table and view of the schema, the statements that would fire
// its triggers (INSERT ... DEFAULT VALUES, an UPDATE of every column,
// DELETE) are compiled, never run, under an authorizer that records every
// table each trigger body reads or writes (SQLite compiles a statement's
// triggers, and the triggers those fire, with it, and names the innermost
// trigger in each authorizer call). A trigger is foreign when it is not one
// of the server's own (name and SQL exactly those it creates) and either
// fires on a write to a server table or reads or writes one. An index on
// a server table (as SQLite's pragma_index_list reports it) is foreign
// unless it is the server's (query_log_ts; in a cluster also
// memory_events_prev_hash, see cluster.go) or SQLite's own for a
// constraint of the table. Any other object that holds
// a server name (a view named memory_events_fts, a query_errors view with
// another definition) is foreign too.
//
// Views that read the server tables are allowed: a view only reads, every
// tool may read the memory, and create_view makes such views; what could
// make a view write is an INSTEAD OF trigger on it, which is judged as a
// trigger.

// ErrForeignObjects: the schema holds objects the server did not create
// that reference its tables (see ForeignObjectsError for which).
var ErrForeignObjects = errors.New("objects the server did not create reference its tables")

// ForeignObject is one schema object found by the start check.
type ForeignObject struct {
	Type, Name string // as in sqlite_master
	// Why says what it does to the server tables.
	Why string
}

// ForeignObjectsError lists the foreign objects; it matches
// ErrForeignObjects.
type ForeignObjectsError struct {
	Path    string
	Objects []ForeignObject
}

func (e *ForeignObjectsError) Unwrap() error { return ErrForeignObjects }

func (e *ForeignObjectsError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v, so appends, checkpoints or the audit log could be dropped or rewritten:", e.Path, ErrForeignObjects)
	var drops []string
	for _, o := range e.Objects {
		fmt.Fprintf(&b, "\n  %s %s: %s", o.Type, rawsqlite.QuoteIdent(o.Name), o.Why)
		drops = append(drops, fmt.Sprintf("DROP %s %s;", strings.ToUpper(o.Type), rawsqlite.QuoteIdent(o.Name)))
	}
	fmt.Fprintf(&b, "\nThe server does not serve this file while they exist. If you did not make them, drop them with the sqlite3 CLI:\n  sqlite3 %s '%s'\nor restore a snapshot from before they appeared (mcp-sqlite-memory restore).",
		e.Path, strings.ReplaceAll(strings.Join(drops, " "), "'", `'\''`))
	return b.String()
}

// ownObjects maps the folded name of each trigger, view and index the
// server creates to its SQL as SQLite stores it (the statement without
// "IF NOT EXISTS").
var ownObjects = func() map[string]string {
	m := make(map[string]string)
	for _, stmt := range slices.Concat(eventsDDL, auditDDL, clusterDDL) {
		if mm := ddlName.FindStringSubmatch(stmt); mm != nil && !strings.HasPrefix(stmt, "CREATE TABLE") {
			m[rawsqlite.FoldName(mm[1])] = strings.Replace(stmt, "IF NOT EXISTS ", "", 1)
		}
	}
	return m
}()

// masterRow is one row of sqlite_master.
type masterRow = rawsqlite.SchemaObject

// checkForeign runs the start check on the database at path (see above)
// and returns a *ForeignObjectsError when it finds foreign objects.
func checkForeign(path string) error {
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		return fmt.Errorf("memory: schema check: %w", err)
	}
	defer c.Close()
	if err := c.BusyTimeout(BusyTimeout); err != nil {
		return fmt.Errorf("memory: schema check: %w", err)
	}
	found, err := foreignObjects(c)
	if err != nil {
		return fmt.Errorf("memory: schema check: %w", err)
	}
	if len(found) > 0 {
		return &ForeignObjectsError{Path: path, Objects: found}
	}
	return nil
}

// foreignObjects runs the check in three steps: the catalogue's own
// findings (views and indexes, and which triggers to judge), the
// triggers' bodies traced through compiled statements, and the findings
// sorted for a person.
func foreignObjects(c *rawsqlite.Conn) ([]ForeignObject, error) {
	rows, err := c.Schema()
	if err != nil {
		return nil, err
	}
	found := findings{}
	triggers, err := catalogueFindings(c, rows, found)
	if err != nil {
		return nil, err
	}
	if len(triggers) > 0 {
		if err := traceTriggers(c, rows, triggers, found); err != nil {
			return nil, err
		}
	}
	return found.list(), nil
}

// findings maps "type\x00name" of each foreign object to the reasons it
// is foreign.
type findings map[string]map[string]bool

func (f findings) add(typ, name, reason string) {
	k := typ + "\x00" + name
	if f[k] == nil {
		f[k] = make(map[string]bool)
	}
	f[k][reason] = true
}

// list is the findings as ForeignObjects, triggers first, then by name,
// each with its reasons sorted and joined; nil when there are none.
func (f findings) list() []ForeignObject {
	var out []ForeignObject
	for k, reasons := range f {
		typ, name, _ := strings.Cut(k, "\x00")
		list := make([]string, 0, len(reasons))
		for r := range reasons {
			list = append(list, r)
		}
		sort.Strings(list)
		out = append(out, ForeignObject{Type: typ, Name: name, Why: strings.Join(list, ", ")})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Type != out[j].Type {
			return out[i].Type > out[j].Type // triggers first
		}
		return out[i].Name < out[j].Name
	})
	return out
}

// ownObject reports whether r is one of the server's own objects: its
// name and exactly the SQL the server creates it with.
func ownObject(r masterRow) bool {
	want, ok := ownObjects[rawsqlite.FoldName(r.Name)]
	return ok && r.SQL == want
}

// catalogueFindings judges what the catalogue alone tells: a view holding
// a server name that is not the server's, and an index on a server table
// that the server did not create. It returns the triggers that are not
// the server's own, by folded name, for traceTriggers to judge.
func catalogueFindings(c *rawsqlite.Conn, rows []masterRow, found findings) (map[string]string, error) {
	triggers := make(map[string]string) // folded trigger name -> its row's name
	for _, r := range rows {
		server := policy.IsProtected(r.Name)
		switch r.Type {
		case "trigger":
			if !ownObject(r) {
				triggers[rawsqlite.FoldName(r.Name)] = r.Name
			}
		case "view":
			if server && !ownObject(r) {
				found.add("view", r.Name, "holds the name of a server object")
			}
		case "table":
			// A server name held by a table of another shape is
			// refused by checkColumns; shadow tables are FTS5's. Its
			// indexes as SQLite attached them when it parsed the schema
			// (origin "c": CREATE INDEX; "u" and "pk" are SQLite's own,
			// for the table's constraints).
			if !server {
				continue
			}
			idx, err := indexesOf(c, r.Name)
			if err != nil {
				return nil, err
			}
			for _, name := range idx {
				if sql, ok := sqlOf(rows, "index", name); !ok || !ownObject(masterRow{Type: "index", Name: name, Table: r.Name, SQL: sql}) {
					found.add("index", name, "is an index on "+r.Name+", which the server did not create")
				}
			}
		}
	}
	return triggers, nil
}

// traceTriggers compiles the statements that fire every trigger (an
// INSERT, an UPDATE of every column and a DELETE of each table and view;
// none of it runs), recording under an authorizer what each of the
// triggers to judge touches: one that fires on a write to a server table,
// or reads or writes one, is foreign.
func traceTriggers(c *rawsqlite.Conn, rows []masterRow, triggers map[string]string, found findings) error {
	var current string // the table or view whose statements compile
	err := c.SetAuthorizer(func(r rawsqlite.AuthRequest) int {
		if r.Trigger == "" {
			return rawsqlite.AuthOK
		}
		name, foreign := triggers[rawsqlite.FoldName(r.Trigger)]
		if !foreign {
			return rawsqlite.AuthOK
		}
		if policy.IsProtected(current) {
			found.add("trigger", name, "runs on writes to "+current)
		}
		switch r.Action {
		case rawsqlite.AuthRead, rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete:
			if policy.IsProtected(r.Arg1) {
				verb := map[int]string{rawsqlite.AuthRead: "reads ", rawsqlite.AuthInsert: "inserts into ", rawsqlite.AuthUpdate: "updates ", rawsqlite.AuthDelete: "deletes from "}[r.Action]
				found.add("trigger", name, verb+r.Arg1)
			}
		}
		return rawsqlite.AuthOK
	})
	if err != nil {
		return err
	}
	defer func() { _ = c.SetAuthorizer(nil) }()
	for _, r := range rows {
		if (r.Type != "table" && r.Type != "view") || strings.HasPrefix(strings.ToUpper(r.SQL), "CREATE VIRTUAL TABLE") {
			continue
		}
		cols, err := columnsOf(c, r.Name)
		if err != nil || len(cols) == 0 {
			continue
		}
		sets := make([]string, len(cols))
		for i, col := range cols {
			sets[i] = rawsqlite.QuoteIdent(col) + " = " + rawsqlite.QuoteIdent(col)
		}
		t := "main." + rawsqlite.QuoteIdent(r.Name)
		current = r.Name
		for _, stmt := range []string{
			"INSERT INTO " + t + " DEFAULT VALUES",
			"UPDATE " + t + " SET " + strings.Join(sets, ", "),
			"DELETE FROM " + t,
		} {
			// Compiled only: the connection is read-only and nothing steps.
			if st, _, err := c.Prepare(stmt); err == nil {
				st.Finalize()
			}
		}
		current = ""
	}
	return nil
}

// columnsOf lists the columns of a table or view.
func columnsOf(c *rawsqlite.Conn, table string) ([]string, error) {
	return firstColumn(c, `SELECT name FROM pragma_table_info(`+sqlString(table)+`, 'main')`)
}

func sqlString(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// indexesOf lists the indexes made by CREATE INDEX on a table.
func indexesOf(c *rawsqlite.Conn, table string) ([]string, error) {
	return firstColumn(c, `SELECT name FROM pragma_index_list(`+sqlString(table)+`, 'main') WHERE origin = 'c'`)
}

// firstColumn is the first column of every row query returns, as text.
func firstColumn(c *rawsqlite.Conn, query string) ([]string, error) {
	var out []string
	err := c.Each(query, func(st *rawsqlite.Stmt) error {
		out = append(out, st.ColumnText(0))
		return nil
	})
	return out, err
}

// sqlOf finds the SQL of the object of type typ named name.
func sqlOf(rows []masterRow, typ, name string) (string, bool) {
	for _, r := range rows {
		if r.Type == typ && rawsqlite.FoldName(r.Name) == rawsqlite.FoldName(name) {
			return r.SQL, true
		}
	}
	return "", false
}
