package snapshot

import (
	"fmt"
	"strings"
	"sync"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// A record or a snapshot is untrusted input (SPEC 5.6): anything that can
// write the snapshot folder can write one. Its schema statements are
// compiled one by one with SQLite's own parser and checked to be of the
// kind and name they declare, everything runs under an authorizer (the
// guard) that refuses the server's objects, and the views and trigger
// bodies it restores are compiled under the guard too, so that none of
// them reaches a server object.

// HostileError is a refusal because of what a record or snapshot holds,
// not because of the database it was applied to: nothing was changed.
type HostileError struct {
	Source string // "undo record" or "snapshot"
	What   string // what is wrong, already escaped
}

func (e *HostileError) Error() string {
	src := e.Source
	if src == "" {
		src = "undo record"
	}
	return "the " + src + " is malformed or hostile: " + e.What + "; your database was not changed"
}

func hostile(format string, args ...any) *HostileError {
	return &HostileError{What: fmt.Sprintf(format, args...)}
}

// IsServerObject reports whether the schema entry name (of table tbl)
// belongs to the server rather than the agent, as policy.IsServerObject
// decides from policy's one list of the server's objects. restore reads
// snapshots and their catalogues through this package alone.
func IsServerObject(name, tbl string) bool { return policy.IsServerObject(name, tbl) }

// IsServerName reports names no record or snapshot may create, change or
// reference: the server's tables and view, its full-text index and the
// index's shadow tables, Litestream's tables, and SQLite's own (sqlite_*).
func IsServerName(name string) bool {
	return policy.IsServerObject(name, "") || hasSQLitePrefix(name)
}

func hasSQLitePrefix(name string) bool {
	return len(name) >= 7 && rawsqlite.FoldName(name[:7]) == "sqlite_"
}

// deniedFunctions load native code or touch files.
var deniedFunctions = map[string]bool{"load_extension": true, "fts3_tokenizer": true, "readfile": true, "writefile": true, "edit": true}

// readPragmas are the introspection PRAGMAs the restore's own statements
// and SQLite's session extension use.
var readPragmas = map[string]bool{"table_info": true, "table_xinfo": true, "table_list": true, "index_list": true, "index_info": true, "index_xinfo": true, "foreign_key_list": true}

// guard is the authorizer of everything a restore runs on the database.
type guard struct {
	mu        sync.Mutex
	violation string
	vtabs     bool // CREATE VIRTUAL TABLE ... USING fts5 or rtree allowed (full snapshots)
	upkeep    bool // writes to sqlite_sequence allowed (the restore's own putSequence)
	recording bool
	viewReads bool // compiling a view: it may read the server's tables (the server's start check allows such views too)
	actions   []rawsqlite.AuthRequest
	triggers  map[string]bool // folded names of triggers whose bodies compiled
}

func newGuard() *guard { return &guard{triggers: map[string]bool{}} }

// names are the object names an action concerns.
func names(r rawsqlite.AuthRequest) []string {
	switch r.Action {
	case rawsqlite.AuthCreateIndex, rawsqlite.AuthDropIndex, rawsqlite.AuthCreateTrigger, rawsqlite.AuthDropTrigger,
		rawsqlite.AuthCreateTempIndex, rawsqlite.AuthDropTempIndex, rawsqlite.AuthCreateTempTrigger, rawsqlite.AuthDropTempTrigger:
		return []string{r.Arg1, r.Arg2}
	case rawsqlite.AuthAlterTable:
		return []string{r.Arg2}
	case rawsqlite.AuthFunction, rawsqlite.AuthSelect, rawsqlite.AuthRecursive, rawsqlite.AuthTransaction,
		rawsqlite.AuthSavepoint, rawsqlite.AuthPragma, rawsqlite.AuthAttach, rawsqlite.AuthDetach:
		return nil
	}
	return []string{r.Arg1}
}

func (g *guard) authorize(r rawsqlite.AuthRequest) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	if r.Trigger != "" {
		g.triggers[rawsqlite.FoldName(r.Trigger)] = true
	}
	if why := g.decide(r); why != "" {
		if g.violation == "" {
			g.violation = why
		}
		return rawsqlite.AuthDeny
	}
	if g.recording && !r.Nested {
		g.actions = append(g.actions, r)
	}
	return rawsqlite.AuthOK
}

func (g *guard) decide(r rawsqlite.AuthRequest) string {
	where := ""
	if r.Trigger != "" {
		where = " (in trigger or view " + Printable(r.Trigger) + ")"
	}
	if r.DB != "" && r.DB != "main" {
		return fmt.Sprintf("it reaches database %s%s; only the main database may be changed", Printable(r.DB), where)
	}
	for _, n := range names(r) {
		if n == "" || !IsServerName(n) {
			continue
		}
		if g.viewReads && r.Action == rawsqlite.AuthRead && rawsqlite.FoldName(n) != "sqlite_dbpage" {
			continue // a view reads; only triggers and writes are refused
		}
		if hasSQLitePrefix(n) && g.sqliteOwn(r, n) {
			continue
		}
		return fmt.Sprintf("it reaches %s, which belongs to the server or to SQLite%s", Printable(n), where)
	}
	switch r.Action {
	case rawsqlite.AuthAttach, rawsqlite.AuthDetach:
		return "it attaches or detaches a database" + where
	case rawsqlite.AuthTransaction, rawsqlite.AuthSavepoint:
		if r.Trigger != "" {
			return "it controls a transaction" + where
		}
	case rawsqlite.AuthPragma:
		// SQLite's session extension defers foreign keys while it applies.
		// R*Tree reads the page size as it creates its table.
		if !readPragmas[rawsqlite.FoldName(r.Arg1)] && !(r.Trigger == "" && rawsqlite.FoldName(r.Arg1) == "defer_foreign_keys") && !(r.Arg2Null && rawsqlite.FoldName(r.Arg1) == "page_size") {
			return "it runs PRAGMA " + Printable(r.Arg1) + where
		}
	case rawsqlite.AuthFunction:
		if deniedFunctions[rawsqlite.FoldName(r.Arg2)] {
			return "it calls " + Printable(r.Arg2) + "()" + where
		}
	case rawsqlite.AuthCreateTempIndex, rawsqlite.AuthCreateTempTable, rawsqlite.AuthCreateTempTrigger, rawsqlite.AuthCreateTempView,
		rawsqlite.AuthDropTempIndex, rawsqlite.AuthDropTempTable, rawsqlite.AuthDropTempTrigger, rawsqlite.AuthDropTempView:
		return "it creates or drops a temporary object" + where
	case rawsqlite.AuthCreateVTable, rawsqlite.AuthDropVTable:
		if m := rawsqlite.FoldName(r.Arg2); !g.vtabs || (m != "fts5" && m != "rtree") {
			return fmt.Sprintf("it creates or drops virtual table %s (module %s)%s", Printable(r.Arg1), Printable(r.Arg2), where)
		}
	}
	return ""
}

// sqliteOwn allows the bookkeeping of SQLite's own tables that DDL and
// the restore itself do at top level: the schema table's rows, the
// AUTOINCREMENT counters and ANALYZE's statistics of dropped tables.
func (g *guard) sqliteOwn(r rawsqlite.AuthRequest, n string) bool {
	if r.Trigger != "" || rawsqlite.FoldName(n) == "sqlite_dbpage" {
		return false
	}
	switch f := rawsqlite.FoldName(n); {
	case f == "sqlite_master" || f == "sqlite_schema":
		return r.Action == rawsqlite.AuthInsert || r.Action == rawsqlite.AuthUpdate || r.Action == rawsqlite.AuthDelete || r.Action == rawsqlite.AuthRead
	case f == "sqlite_sequence":
		switch r.Action {
		case rawsqlite.AuthDelete, rawsqlite.AuthCreateTable, rawsqlite.AuthRead:
			return true
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate:
			return g.upkeep
		}
	case strings.HasPrefix(f, "sqlite_autoindex_"):
		return r.Action == rawsqlite.AuthCreateIndex || r.Action == rawsqlite.AuthDropIndex
	case strings.HasPrefix(f, "sqlite_stat"):
		return r.Action == rawsqlite.AuthDelete || r.Action == rawsqlite.AuthCreateTable
	}
	return false
}

// take returns and clears the first refusal.
func (g *guard) take() string {
	g.mu.Lock()
	defer g.mu.Unlock()
	v := g.violation
	g.violation = ""
	return v
}

func (g *guard) record(on bool) []rawsqlite.AuthRequest {
	g.mu.Lock()
	defer g.mu.Unlock()
	out := g.actions
	g.recording, g.actions = on, nil
	return out
}

// explain is err from a statement the guard may have refused, as the
// record's fault when it did.
func (g *guard) explain(err error, what string) error {
	if v := g.take(); v != "" {
		return hostile("%s: %s", what, v)
	}
	return err
}

// createAction is the authorizer action that creates an object of typ.
var createAction = map[string]int{
	"table":   rawsqlite.AuthCreateTable,
	"index":   rawsqlite.AuthCreateIndex,
	"view":    rawsqlite.AuthCreateView,
	"trigger": rawsqlite.AuthCreateTrigger,
}

// Object is one schema object to create from stored SQL, as
// sqlite_schema holds it.
type Object struct{ Type, Name, Table, SQL string }

func (o Object) label() string { return o.Type + " " + Printable(o.Name) }

// checkedCreate compiles o.SQL on c under the guard, checks that it is
// exactly one statement creating exactly o (the declared type, name and
// table), and runs it.
func checkedCreate(c *rawsqlite.Conn, g *guard, o Object) error {
	want, ok := createAction[o.Type]
	vtab := o.Type == "table" && g.vtabs && isVirtual(o.SQL)
	if !ok {
		return hostile("it declares an object of type %s", Printable(o.Type))
	}
	if o.Name == "" || IsServerName(o.Name) || (o.Type != "view" && o.Table != "" && IsServerName(o.Table)) {
		return hostile("it would create %s on %s, a name of the server or of SQLite", o.label(), Printable(o.Table))
	}
	g.take()
	g.record(true)
	st, tail, err := c.Prepare(o.SQL)
	actions := g.record(false)
	if err != nil {
		if v := g.take(); v != "" {
			return hostile("the SQL of %s: %s", o.label(), v)
		}
		return hostile("the SQL of %s does not compile (%v)", o.label(), err)
	}
	if st == nil {
		return hostile("the SQL of %s is empty", o.label())
	}
	defer st.Finalize()
	if !rawsqlite.IsBlank(tail) {
		return hostile("the SQL of %s holds more than one statement: %s", o.label(), Printable(oneLine(tail)))
	}
	created := 0
	for _, a := range actions {
		switch a.Action {
		case rawsqlite.AuthCreateTable, rawsqlite.AuthCreateIndex, rawsqlite.AuthCreateView, rawsqlite.AuthCreateTrigger, rawsqlite.AuthCreateVTable:
			if (a.Action == rawsqlite.AuthCreateTable || a.Action == rawsqlite.AuthCreateIndex) && hasSQLitePrefix(a.Arg1) {
				continue // sqlite_sequence with the first AUTOINCREMENT table, a key's automatic index
			}
			created++
			okKind := a.Action == want || (vtab && a.Action == rawsqlite.AuthCreateVTable)
			if !okKind || !rawsqlite.SameName(a.Arg1, o.Name) {
				return hostile("the SQL declared as %s creates something else: %s", o.label(), Printable(oneLine(o.SQL)))
			}
			if (a.Action == rawsqlite.AuthCreateIndex || a.Action == rawsqlite.AuthCreateTrigger) && o.Table != "" && !rawsqlite.SameName(a.Arg2, o.Table) {
				return hostile("the SQL declared as %s on %s is on %s", o.label(), Printable(o.Table), Printable(a.Arg2))
			}
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete:
			if !hasSQLitePrefix(a.Arg1) && !(vtab && strings.HasPrefix(rawsqlite.FoldName(a.Arg1), rawsqlite.FoldName(o.Name)+"_")) {
				return hostile("the SQL declared as %s writes %s: %s", o.label(), Printable(a.Arg1), Printable(oneLine(o.SQL)))
			}
		case rawsqlite.AuthSelect, rawsqlite.AuthRead, rawsqlite.AuthRecursive:
			// A generated column reads its own table.
			if o.Type == "table" && !vtab && !(a.Action == rawsqlite.AuthRead && (hasSQLitePrefix(a.Arg1) || rawsqlite.SameName(a.Arg1, o.Name))) {
				return hostile("the SQL declared as %s runs a query (CREATE TABLE ... AS SELECT): %s", o.label(), Printable(oneLine(o.SQL)))
			}
		}
	}
	if created != 1 {
		return hostile("the SQL declared as %s creates %d objects: %s", o.label(), created, Printable(oneLine(o.SQL)))
	}
	for {
		row, err := st.Step()
		if err != nil {
			return g.explain(fmt.Errorf("recreate %s: %w", o.label(), err), "the SQL of "+o.label())
		}
		if !row {
			return nil
		}
	}
}

// probe compiles, under the guard, what makes SQLite compile the bodies of
// the views and triggers just created: a SELECT of each view, and each
// kind of write to the table or view a trigger is on (none of it runs).
// A trigger body that reaches a server object (reads included) is
// refused, and so is a trigger whose body never compiled; a view may read
// the server's tables (it cannot write), as the server's start check
// allows.
func probe(c *rawsqlite.Conn, g *guard, objs []Object) error {
	if _, err := c.DBConfig(rawsqlite.ConfigEnableTrigger, true); err != nil {
		return err
	}
	defer c.DBConfig(rawsqlite.ConfigEnableTrigger, false)
	tables := map[string]bool{}
	var triggers []Object
	for _, o := range objs {
		switch o.Type {
		case "view":
			g.mu.Lock()
			g.viewReads = true
			g.mu.Unlock()
			err := compileOnly(c, g, "SELECT * FROM "+rawsqlite.QuoteIdent(o.Name), o.label())
			g.mu.Lock()
			g.viewReads = false
			g.mu.Unlock()
			if err != nil {
				return err
			}
		case "trigger":
			triggers = append(triggers, o)
			tables[rawsqlite.FoldName(o.Table)] = true
		}
	}
	for _, o := range triggers {
		if !tables[rawsqlite.FoldName(o.Table)] {
			continue
		}
		delete(tables, rawsqlite.FoldName(o.Table))
		cols, _, err := storedColumns(c, o.Table)
		if err != nil {
			return err
		}
		set := make([]string, len(cols))
		for i, col := range cols {
			set[i] = rawsqlite.QuoteIdent(col) + " = " + rawsqlite.QuoteIdent(col)
		}
		stmts := []string{"INSERT INTO " + rawsqlite.QuoteIdent(o.Table) + " DEFAULT VALUES", "DELETE FROM " + rawsqlite.QuoteIdent(o.Table)}
		if len(set) > 0 {
			stmts = append(stmts, "UPDATE "+rawsqlite.QuoteIdent(o.Table)+" SET "+strings.Join(set, ", "))
		}
		for _, s := range stmts {
			if err := compileOnly(c, g, s, "the triggers on "+Printable(o.Table)); err != nil {
				return err
			}
		}
	}
	for _, o := range triggers {
		if !g.triggers[rawsqlite.FoldName(o.Name)] {
			return hostile("the body of %s could not be checked (no statement on %s compiles it)", o.label(), Printable(o.Table))
		}
	}
	return nil
}

// compileOnly prepares query under the guard and finalizes it unrun.
func compileOnly(c *rawsqlite.Conn, g *guard, query string, label string) error {
	g.take()
	st, _, err := c.Prepare(query)
	if err != nil {
		if v := g.take(); v != "" {
			return hostile("%s: %s", label, v)
		}
		return hostile("%s cannot be compiled (%s)", label, Printable(err.Error()))
	}
	if st != nil {
		st.Finalize()
	}
	return nil
}

// checkForeignKeys refuses tables whose foreign keys refer to a server
// object.
func checkForeignKeys(c *rawsqlite.Conn, objs []Object) error {
	for _, o := range objs {
		if o.Type != "table" {
			continue
		}
		var bad string
		err := c.Each("SELECT \"table\" FROM pragma_foreign_key_list(?1)", func(st *rawsqlite.Stmt) error {
			if t := st.ColumnText(0); IsServerName(t) && bad == "" {
				bad = t
			}
			return nil
		}, o.Name)
		if err != nil {
			return err
		}
		if bad != "" {
			return hostile("%s has a foreign key to %s, a server object", o.label(), Printable(bad))
		}
	}
	return nil
}
