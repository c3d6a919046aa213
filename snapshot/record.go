package snapshot

import (
	"errors"
	"fmt"
	"os"
	"sort"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Format is the version of the record layout, in undo_info.format.
const Format = 1

// Kind is undo_info.kind, which tells an undo record from a full copy.
const Kind = "undo"

// FullCopyNeeded is returned when the session extension cannot capture the
// statement; the caller takes a full copy instead. Reason says why, for the
// audit row.
type FullCopyNeeded struct{ Reason string }

func (e *FullCopyNeeded) Error() string { return "a full copy is needed: " + e.Reason }

// Plan is what the statement will do, as its compilation told the caller.
type Plan struct {
	// Copy are the tables the statement drops or alters: copied whole
	// before it runs, and left out of the session.
	Copy []string
	// Writes are the tables the statement, its triggers and its
	// foreign-key actions insert into, update or delete from.
	Writes []string
	// Skip reports tables never to record (the server's own).
	Skip func(table string) bool
}

// object is one row of sqlite_schema.
type object struct {
	Type, Name, Table, SQL string
}

func (o object) key() string { return o.Type + "\x00" + rawsqlite.FoldName(o.Name) }

// Recorder records one statement. Begin it inside the statement's write
// transaction, before the statement runs; Finish it after the statement
// ran and before the transaction commits; Abort it on any failure.
type Recorder struct {
	db, rec *rawsqlite.Conn
	path    string
	before  map[string]object
	copied  map[string]string // folded table name -> copy table in the record
	plan    Plan
	session *rawsqlite.Session
	nullPK  map[string][]string // written tables whose key allows NULL -> key columns
	seq     map[string]int64    // copied AUTOINCREMENT tables -> their sqlite_sequence value
}

// Begin creates the record file at path (which must not exist), copies
// the tables the statement drops or alters into it and starts a session
// on db. db must be in the write transaction the statement will run in.
// It returns *FullCopyNeeded when the statement is one an undo record
// cannot capture.
func Begin(db *rawsqlite.Conn, path string, plan Plan) (r *Recorder, err error) {
	r = &Recorder{db: db, path: path, copied: map[string]string{}, plan: plan, nullPK: map[string][]string{}, seq: map[string]int64{}}
	if r.before, err = readSchema(db); err != nil {
		return nil, err
	}
	if err := r.check(); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return nil, err
	}
	if err := f.Close(); err != nil {
		os.Remove(path)
		return nil, err
	}
	defer func() {
		if err != nil {
			r.Abort()
		}
	}()
	if r.rec, err = rawsqlite.Open(path, rawsqlite.ReadWrite); err != nil {
		return r, err
	}
	// The file is written once, synced by the caller and renamed: a
	// journal would only cost time (a failed record is removed whole).
	if err := r.rec.Exec(recordSchema); err != nil {
		return r, err
	}
	for i, t := range plan.Copy {
		name := fmt.Sprintf("undo_copy_%d", i+1)
		if err := r.copyTable(t, name); err != nil {
			return r, err
		}
		r.copied[rawsqlite.FoldName(t)] = name
	}
	r.session, err = db.NewSession(r.records)
	return r, err
}

const recordSchema = `PRAGMA journal_mode=OFF; PRAGMA synchronous=OFF;
CREATE TABLE undo_info(format INTEGER, kind TEXT, taken TEXT, statement TEXT, reason TEXT, tables TEXT, rows INTEGER, changeset_bytes INTEGER);
CREATE TABLE undo_rows(tbl TEXT PRIMARY KEY, inserts INTEGER, updates INTEGER, deletes INTEGER);
CREATE TABLE undo_schema(seq INTEGER PRIMARY KEY, action TEXT, type TEXT, name TEXT, tbl_name TEXT, sql TEXT, copy TEXT, columns TEXT, sequence INTEGER);
CREATE TABLE undo_changeset(seq INTEGER PRIMARY KEY, data BLOB);`

// records is the session's table filter: every table that existed before
// the statement, but the copied ones, SQLite's own and the skipped ones.
func (r *Recorder) records(table string) bool {
	folded := rawsqlite.FoldName(table)
	if _, ok := r.copied[folded]; ok || strings.HasPrefix(folded, "sqlite_") {
		return false
	}
	if r.plan.Skip != nil && r.plan.Skip(table) {
		return false
	}
	_, existed := r.before[object{Type: "table", Name: table}.key()]
	return existed
}

// check refuses, before anything is written, statements the session
// cannot capture: writes to virtual tables or their shadow tables, and
// tables whose key holds a NULL (the session leaves such rows out).
func (r *Recorder) check() error {
	kinds := map[string]string{}
	err := r.db.Each("SELECT name, type FROM pragma_table_list WHERE schema = 'main'", func(st *rawsqlite.Stmt) error {
		kinds[rawsqlite.FoldName(st.ColumnText(0))] = st.ColumnText(1)
		return nil
	})
	if err != nil {
		return err
	}
	for _, t := range append(append([]string{}, r.plan.Writes...), r.plan.Copy...) {
		switch kinds[rawsqlite.FoldName(t)] {
		case "virtual":
			return &FullCopyNeeded{Reason: fmt.Sprintf("the statement changes virtual table %s, which the session extension cannot record", t)}
		case "shadow":
			return &FullCopyNeeded{Reason: fmt.Sprintf("the statement changes %s, a virtual table's shadow table", t)}
		}
	}
	copies := map[string]bool{}
	for _, t := range r.plan.Copy {
		copies[rawsqlite.FoldName(t)] = true
	}
	for _, t := range r.plan.Writes {
		if copies[rawsqlite.FoldName(t)] {
			continue // copied whole, not recorded by the session
		}
		cols, err := nullableKey(r.db, t)
		if err != nil {
			return err
		}
		if len(cols) > 0 {
			r.nullPK[t] = cols
		}
	}
	return r.checkNullKeys()
}

// checkNullKeys fails when a written table has a row whose key is NULL.
func (r *Recorder) checkNullKeys() error {
	for t, cols := range r.nullPK {
		conds := make([]string, len(cols))
		for i, c := range cols {
			conds[i] = rawsqlite.QuoteIdent(c) + " IS NULL"
		}
		found := false
		err := r.db.Each("SELECT 1 FROM "+rawsqlite.QuoteIdent(t)+" WHERE "+strings.Join(conds, " OR ")+" LIMIT 1", func(*rawsqlite.Stmt) error {
			found = true
			return nil
		})
		if err != nil {
			return err
		}
		if found {
			return &FullCopyNeeded{Reason: fmt.Sprintf("table %s has rows whose PRIMARY KEY is NULL, which the session extension cannot record", t)}
		}
	}
	return nil
}

// nullableKey lists the key columns of a rowid table with a declared
// PRIMARY KEY that may hold NULL (SQLite allows it, for old files' sake);
// nil for any other table.
func nullableKey(db *rawsqlite.Conn, table string) ([]string, error) {
	var cols []string
	var types []string
	nullable := false
	err := db.Each("SELECT name, type, \"notnull\" FROM pragma_table_info(?1) WHERE pk > 0 ORDER BY pk", func(st *rawsqlite.Stmt) error {
		cols = append(cols, st.ColumnText(0))
		types = append(types, st.ColumnText(1))
		nullable = nullable || st.ColumnInt64(2) == 0
		return nil
	}, table)
	if err != nil || !nullable {
		return nil, err
	}
	if len(cols) == 1 && strings.EqualFold(types[0], "INTEGER") {
		return nil, nil // the rowid itself
	}
	wr := false
	err = db.Each("SELECT wr FROM pragma_table_list WHERE schema = 'main' AND name = ?1", func(st *rawsqlite.Stmt) error {
		wr = st.ColumnInt64(0) != 0
		return nil
	}, table)
	if wr {
		return nil, err // WITHOUT ROWID keys are NOT NULL
	}
	return cols, err
}

// copyTable copies table t of db whole into the record as name, with
// every stored column and the rowid, and notes its definition and those
// of its indexes and triggers for Apply to recreate.
func (r *Recorder) copyTable(t, name string) error {
	cols, rowid, err := storedColumns(r.db, t)
	if err != nil {
		return err
	}
	if len(cols) == 0 {
		return fmt.Errorf("table %s has no columns to copy", t)
	}
	// DROP TABLE forgets an AUTOINCREMENT table's counter; it must not go
	// back, or ids handed out before would be handed out again.
	hasSeq, err := scalar(r.db, "SELECT count(*) FROM sqlite_schema WHERE name = 'sqlite_sequence'")
	if err != nil {
		return err
	}
	if hasSeq > 0 {
		err := r.db.Each("SELECT seq FROM sqlite_sequence WHERE name = ?1", func(st *rawsqlite.Stmt) error {
			r.seq[rawsqlite.FoldName(t)] = st.ColumnInt64(0)
			return nil
		}, t)
		if err != nil {
			return err
		}
	}
	all := cols
	if rowid != "" {
		all = append([]string{rowid}, cols...)
	}
	colList := make([]string, len(all))
	for i, c := range all {
		colList[i] = rawsqlite.QuoteIdent(c)
	}
	// Columns without a declared type keep every value as it was stored.
	if err := r.rec.Exec("CREATE TABLE " + rawsqlite.QuoteIdent(name) + "(" + strings.Join(colList, ", ") + ")"); err != nil {
		return err
	}
	// One transaction: a commit per row would write the file's pages
	// once per row.
	if err := r.rec.Exec("BEGIN"); err != nil {
		return err
	}
	if err := copyRows(r.db, "SELECT "+strings.Join(colList, ", ")+" FROM "+rawsqlite.QuoteIdent(t), r.rec, "INSERT INTO "+rawsqlite.QuoteIdent(name)+" VALUES ("+placeholders(len(all))+")"); err != nil {
		return err
	}
	return r.rec.Exec("COMMIT")
}

// Info is what the record says about its statement.
type Info struct {
	Taken, Statement, Reason string
}

// Summary is what Finish recorded.
type Summary struct {
	Bytes  int64    // size of the record file
	Rows   int64    // rows the undo puts back
	Tables []string // tables it touches
}

// Finish writes what the statement changed into the record, syncs nothing
// (the caller syncs and renames the file) and closes it. It returns
// *FullCopyNeeded when the statement turned out to change something the
// record cannot hold; Abort the recorder then.
func (r *Recorder) Finish(info Info) (Summary, error) {
	var sum Summary
	if err := r.checkNullKeys(); err != nil {
		return sum, err
	}
	after, err := readSchema(r.db)
	if err != nil {
		return sum, err
	}
	cs, err := r.session.Changeset()
	if err != nil {
		return sum, err
	}
	r.session.Delete()
	inv, err := rawsqlite.InvertChangeset(cs)
	if err != nil {
		return sum, err
	}
	counts := map[string]*[3]int64{}
	err = rawsqlite.EachChange(inv, func(ch rawsqlite.Change) error {
		c := counts[ch.Table]
		if c == nil {
			c = new([3]int64)
			counts[ch.Table] = c
		}
		switch ch.Op {
		case rawsqlite.OpInsert:
			c[0]++
		case rawsqlite.OpUpdate:
			c[1]++
		default:
			c[2]++
		}
		sum.Rows++
		return nil
	})
	if err != nil {
		return sum, err
	}
	if err := r.rec.Exec("BEGIN"); err != nil {
		return sum, err
	}
	objects, err := r.writeSchema(after)
	if err != nil {
		return sum, err
	}
	tables := map[string]bool{}
	for _, t := range objects {
		tables[t] = true
	}
	for t, c := range counts {
		tables[t] = true
		if err := execArgs(r.rec, "INSERT INTO undo_rows VALUES (?1, ?2, ?3, ?4)", t, c[0], c[1], c[2]); err != nil {
			return sum, err
		}
	}
	for _, t := range r.plan.Copy {
		tables[t] = true
		n, err := scalar(r.rec, "SELECT count(*) FROM "+rawsqlite.QuoteIdent(r.copied[rawsqlite.FoldName(t)]))
		if err != nil {
			return sum, err
		}
		sum.Rows += n
	}
	for t := range tables {
		sum.Tables = append(sum.Tables, t)
	}
	sort.Strings(sum.Tables)
	if err := execArgs(r.rec, "INSERT INTO undo_changeset(data) VALUES (?1)", inv); err != nil {
		return sum, err
	}
	if err := execArgs(r.rec, "INSERT INTO undo_info VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
		int64(Format), Kind, info.Taken, info.Statement, info.Reason, strings.Join(sum.Tables, ","), sum.Rows, int64(len(inv))); err != nil {
		return sum, err
	}
	if err := r.rec.Exec("COMMIT"); err != nil {
		return sum, err
	}
	err = r.rec.Close()
	r.rec = nil
	if err != nil {
		return sum, err
	}
	if fi, err := os.Stat(r.path); err == nil {
		sum.Bytes = fi.Size()
	}
	return sum, nil
}

// writeSchema records how to put the schema back: the objects to drop
// (created or changed by the statement) and, in the order to recreate
// them, the objects it removed or changed, with the copies of tables.
func (r *Recorder) writeSchema(after map[string]object) (tables []string, err error) {
	var drops, creates []object
	for k, o := range after {
		if b, ok := r.before[k]; !ok || b.SQL != o.SQL {
			drops = append(drops, o)
		}
	}
	recreate := map[string]bool{}
	for k, o := range r.before {
		if a, ok := after[k]; !ok || a.SQL != o.SQL {
			recreate[k] = true
		}
	}
	// A copied table is dropped and recreated with its rows, its indexes
	// and its triggers, whatever the statement did to it.
	for k, o := range r.before {
		if _, copied := r.copied[rawsqlite.FoldName(o.Table)]; copied && o.Type != "view" {
			recreate[k] = true
			if a, ok := after[k]; ok && o.Type == "table" && !containsKey(drops, k) {
				drops = append(drops, a)
			}
		}
	}
	for k := range recreate {
		o := r.before[k]
		if o.Type == "table" {
			if _, copied := r.copied[rawsqlite.FoldName(o.Name)]; !copied {
				return nil, &FullCopyNeeded{Reason: fmt.Sprintf("the statement changed the definition of table %s, which it does not name (a rename rewrites the tables that refer to it)", o.Name)}
			}
		}
		if isVirtual(o.SQL) {
			return nil, &FullCopyNeeded{Reason: fmt.Sprintf("the statement drops or changes virtual table %s", o.Name)}
		}
		creates = append(creates, o)
	}
	for _, o := range drops {
		if o.Type == "table" && isVirtual(o.SQL) {
			return nil, &FullCopyNeeded{Reason: fmt.Sprintf("the statement creates virtual table %s", o.Name)}
		}
	}
	sortObjects(drops, []string{"trigger", "view", "index", "table"})
	sortObjects(creates, []string{"table", "index", "view", "trigger"})
	for _, o := range drops {
		if err := execArgs(r.rec, "INSERT INTO undo_schema(action, type, name, tbl_name, sql) VALUES ('drop', ?1, ?2, ?3, ?4)", o.Type, o.Name, o.Table, o.SQL); err != nil {
			return nil, err
		}
		tables = append(tables, o.Table)
	}
	for _, o := range creates {
		var copyName, columns, seq any
		if v, ok := r.seq[rawsqlite.FoldName(o.Name)]; ok && o.Type == "table" {
			seq = v
		}
		if o.Type == "table" {
			copyName = r.copied[rawsqlite.FoldName(o.Name)]
			cols, err := columnsOf(r.rec, copyName.(string))
			if err != nil {
				return nil, err
			}
			columns = strings.Join(cols, "\x1f")
		}
		if err := execArgs(r.rec, "INSERT INTO undo_schema(action, type, name, tbl_name, sql, copy, columns, sequence) VALUES ('create', ?1, ?2, ?3, ?4, ?5, ?6, ?7)", o.Type, o.Name, o.Table, o.SQL, copyName, columns, seq); err != nil {
			return nil, err
		}
		tables = append(tables, o.Table)
	}
	return tables, nil
}

func containsKey(objs []object, k string) bool {
	for _, o := range objs {
		if o.key() == k {
			return true
		}
	}
	return false
}

// sortObjects orders objects by type (in order) and then by name.
func sortObjects(objs []object, order []string) {
	rank := map[string]int{}
	for i, t := range order {
		rank[t] = i
	}
	sort.Slice(objs, func(i, j int) bool {
		if rank[objs[i].Type] != rank[objs[j].Type] {
			return rank[objs[i].Type] < rank[objs[j].Type]
		}
		return objs[i].Name < objs[j].Name
	})
}

func isVirtual(sql string) bool {
	return strings.HasPrefix(strings.ToUpper(strings.Join(strings.Fields(sql), " ")), "CREATE VIRTUAL TABLE")
}

// Abort ends the session, closes and removes the record file. Abort after
// Finish removes the finished file.
func (r *Recorder) Abort() {
	if r == nil {
		return
	}
	r.session.Delete()
	if r.rec != nil {
		r.rec.Close()
		r.rec = nil
	}
	for _, p := range []string{r.path, r.path + "-journal"} {
		if err := os.Remove(p); err != nil && !errors.Is(err, os.ErrNotExist) {
			continue
		}
	}
}

// readSchema reads the main database's objects with a definition (not
// SQLite's automatic indexes or its own tables).
func readSchema(db *rawsqlite.Conn) (map[string]object, error) {
	out := map[string]object{}
	rows, err := db.Schema()
	for _, r := range rows {
		if r.SQL != "" && !hasSQLitePrefix(r.Name) {
			o := object(r)
			out[o.key()] = o
		}
	}
	return out, err
}

// PlanFrom reads a statement's plan from the authorizer requests its
// compilation made (trigger bodies and foreign-key actions included).
func PlanFrom(actions []rawsqlite.AuthRequest) Plan {
	var p Plan
	seen := map[string]bool{}
	add := func(list *[]string, kind, t string) {
		k := kind + rawsqlite.FoldName(t)
		if t == "" || strings.HasPrefix(rawsqlite.FoldName(t), "sqlite_") || seen[k] {
			return
		}
		seen[k] = true
		*list = append(*list, t)
	}
	for _, a := range actions {
		if a.Action == rawsqlite.AuthAlterTable {
			// (database, table); SQLite passes a dropped column as DB.
			if a.Arg1 == "main" {
				add(&p.Copy, "c", a.Arg2)
			}
			continue
		}
		if a.DB != "main" && a.DB != "" {
			continue
		}
		switch a.Action {
		case rawsqlite.AuthDropTable, rawsqlite.AuthDropVTable:
			add(&p.Copy, "c", a.Arg1)
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete, rawsqlite.AuthCreateVTable:
			add(&p.Writes, "w", a.Arg1)
		}
	}
	return p
}
