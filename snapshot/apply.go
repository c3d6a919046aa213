package snapshot

import (
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// Options change how Apply treats a database that moved on.
type Options struct {
	// Force overwrites rows and objects that were changed since the
	// record was taken, instead of refusing.
	Force bool
	// Safety, when set, asks Apply to record its own changes as an undo
	// record of their own, the safety copy of the state it replaces, at
	// Safety.Partial (a new file); Safety.Keep syncs and names it before
	// the apply commits, and returns its path (Result.Safety). A record
	// that changes the schema cannot be captured so: Apply then changes
	// nothing and returns *FullCopyNeeded, and the caller takes a full
	// copy and applies without Safety.
	Safety *Safety
	// DryRun runs every step and check of the apply and rolls it back.
	DryRun bool
	// Timeout bounds the apply's time: it is interrupted and rolled
	// back after it (0: no bound).
	Timeout time.Duration
	// MaxGrowth bounds, in bytes, how much the database may grow
	// (max_page_count; 0: no bound).
	MaxGrowth int64
}

// Safety is where Apply writes the undo record of its own changes.
type Safety struct {
	Partial   string
	Taken     string // undo_info.taken
	Statement string // what the safety record undoes, for undo_info
	Keep      func(partial string) (string, error)
}

// Conflict is one row or object the undo would put back that was changed
// since the record was taken.
type Conflict struct {
	Table string // table (or object) name
	Key   string // the row's key, "id=2"; "" for an object
	What  string // what changed
}

// String is the conflict for a person, with the record's texts escaped
// (see [Printable]).
func (c Conflict) String() string {
	if c.Key == "" {
		return Printable(c.Table) + ": " + Printable(c.What)
	}
	return Printable(c.Table) + " (" + Printable(c.Key) + "): " + Printable(c.What)
}

// ConflictError is Apply's refusal: nothing was changed.
type ConflictError struct{ Conflicts []Conflict }

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the undo record was not applied: %d rows or objects it would put back were changed since it was taken, and nothing was changed:", len(e.Conflicts))
	for i, c := range e.Conflicts {
		if i == 20 {
			fmt.Fprintf(&b, "\n  ... and %d more", len(e.Conflicts)-i)
			break
		}
		b.WriteString("\n  " + c.String())
	}
	b.WriteString("\nrestore them by hand, or run restore again with --force to overwrite them with the record's rows")
	return b.String()
}

// Record is what an undo record says about itself.
type Record struct {
	Format    int64
	Taken     string
	Statement string
	Reason    string
	Tables    string
	Rows      int64
}

// Result is what Apply did (with Options.DryRun, what it would do). Its
// Record is what the record says of itself; the rest is what the apply
// found in the record and did, after every check.
type Result struct {
	Record
	Rows        int64      // rows put back (changeset rows and copied rows)
	Objects     int        // objects dropped or recreated
	Overwritten []Conflict // conflicts Force overwrote
	Safety      string     // the kept safety record (Options.Safety)
	// Steps are the record's objects, in the order it drops and creates
	// them; those already as the record would leave them are Skipped.
	Steps []ObjectStep
	// Changes counts the changeset's rows by table, in the order it
	// names them.
	Changes []TableChanges
}

// ObjectStep is one object an undo record drops or creates.
type ObjectStep struct {
	Action string // "drop" or "create"
	Type   string // "table", "index", "view" or "trigger"
	Name   string
	Table  string // the table of an index or trigger
	Rows   int64  // the rows copied into a created table
	// Skipped is true when the object was already as the record would
	// leave it (already there, or already gone), so the apply left it.
	Skipped bool
}

// String is the object for a person, with the record's names escaped
// (see [Printable]): "trigger notes_ai on notes", "table notes (3 rows)".
func (s ObjectStep) String() string {
	t := s.Type + " " + Printable(s.Name)
	if s.Table != "" && rawsqlite.FoldName(s.Table) != rawsqlite.FoldName(s.Name) {
		t += " on " + Printable(s.Table)
	}
	if s.Action == "create" && s.Type == "table" {
		t += fmt.Sprintf(" (%d rows)", s.Rows)
	}
	return t
}

// TableChanges is how many rows of one table the changeset puts back.
type TableChanges struct {
	Table string
	Rows  int64
}

// IsRecord reports whether the SQLite file at path is an undo record.
// It opens the file as immutable: a read-only connection to a full
// snapshot in WAL mode (a copy of a WAL database, a cluster node's) would
// leave an empty -wal and a -shm beside it.
func IsRecord(path string) bool {
	c, err := rawsqlite.OpenImmutable(path)
	if err != nil {
		return false
	}
	defer c.Close()
	n, err := scalar(c, "SELECT count(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('undo_info', 'undo_changeset', 'undo_schema', 'undo_rows')")
	if err != nil || n != 4 {
		return false
	}
	// A database of the agent's own could have tables of these names.
	k, err := scalar(c, "SELECT count(*) FROM undo_info WHERE kind = ?1", Kind)
	return err == nil && k == 1
}

// ReadRecord reads the record's undo_info.
func ReadRecord(path string) (Record, error) {
	var r Record
	c, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		return r, err
	}
	defer c.Close()
	return readInfo(c)
}

func readInfo(c *rawsqlite.Conn) (Record, error) {
	var r Record
	found := false
	err := c.Each("SELECT format, taken, statement, reason, tables, rows FROM undo_info", func(st *rawsqlite.Stmt) error {
		found = true
		r = Record{Format: st.ColumnInt64(0), Taken: st.ColumnText(1), Statement: st.ColumnText(2), Reason: st.ColumnText(3), Tables: st.ColumnText(4), Rows: st.ColumnInt64(5)}
		return nil
	})
	if err == nil && !found {
		err = errors.New("the undo record has no undo_info row; it is not a complete record")
	}
	if err == nil && r.Format != Format {
		err = fmt.Errorf("the undo record has format %d; this version reads format %d", r.Format, Format)
	}
	return r, err
}

// Apply applies the undo record at path to db in one transaction: it
// drops the objects the statement created or changed, recreates those it
// dropped or changed (tables with their rows), and applies the inverted
// changeset. Rows or objects that were changed since the record was taken
// make it refuse with *ConflictError (nothing changed) unless opt.Force.
// A row already as the record would put it back is no conflict, so a
// record whose statement never committed applies as a no-op.
//
// The record is untrusted input (see guard.go): a record that holds
// anything but what the recorder writes, or that would reach a server
// object, is refused with *HostileError and changes nothing. The apply is
// bounded by opt.Timeout and opt.MaxGrowth.
//
// db must be a connection of its own, outside any transaction: Apply
// turns off foreign keys and triggers on it for the undo (they would act
// again on rows being put back) and back on afterwards. Several records
// are applied newest first, each against the state the next newer one
// restored.
func Apply(db *rawsqlite.Conn, path string, opt Options) (res Result, err error) {
	rec, err := rawsqlite.Open(path, rawsqlite.ReadOnly)
	if err != nil {
		return res, fmt.Errorf("open the undo record: %w", err)
	}
	defer rec.Close()
	if _, err := rec.DBConfig(rawsqlite.ConfigTrustedSchema, false); err != nil {
		return res, err
	}
	if err := checkLayout(rec); err != nil {
		return res, err
	}
	if res.Record, err = readInfo(rec); err != nil {
		return res, hostileRead(err)
	}
	cs, steps, err := readContents(rec)
	if err != nil {
		return res, err
	}
	// Every table the changeset names, checked before anything runs: the
	// server's (the index's shadow tables too) and SQLite's are refused.
	shapes, order, counts, err := changesetTables(cs)
	if err != nil {
		return res, err
	}
	var csRows int64
	for _, t := range order {
		res.Changes = append(res.Changes, TableChanges{Table: t, Rows: counts[t]})
		csRows += counts[t]
	}

	if opt.Safety != nil && len(steps) > 0 {
		return res, &FullCopyNeeded{Reason: "the undo record recreates or drops objects, which a record of the restore cannot capture"}
	}
	settle, err := setUpConn(db, opt.MaxGrowth)
	if err != nil {
		return res, err
	}
	defer settle()
	tx, err := db.BeginImmediate()
	if err != nil {
		return res, err
	}
	defer tx.Rollback()
	// Stopped before the rollback runs, which it must not interrupt.
	b := startBudget(opt.Timeout, db, rec)
	defer b.stop()
	g := newGuard()
	if err := db.SetAuthorizer(g.authorize); err != nil {
		return res, err
	}
	defer db.SetAuthorizer(nil)
	defer func() { err = opt.budgetError(err, b) }()

	skip, conflicts, err := planSteps(db, steps)
	if err != nil {
		return res, err
	}
	if len(conflicts) > 0 && !opt.Force {
		return res, &ConflictError{Conflicts: conflicts}
	}
	res.Overwritten = append(res.Overwritten, conflicts...)
	created, done, rows, err := runSteps(db, rec, g, steps, skip, opt.Force)
	res.Steps = done
	for _, d := range done {
		if !d.Skipped {
			res.Objects++
		}
	}
	res.Rows += rows
	if err != nil {
		return res, err
	}
	if err := probe(db, g, created); err != nil {
		return res, err
	}
	if err := checkForeignKeys(db, created); err != nil {
		return res, err
	}

	// Tables the changeset names must be there, as plain tables, with the
	// same columns: SQLite would skip a table that is not.
	names, err := targetTables(db, order, shapes)
	if err != nil {
		return res, err
	}
	var safety *Recorder
	if opt.Safety != nil {
		plan := Plan{Skip: policy.IsProtected}
		for t := range shapes {
			plan.Writes = append(plan.Writes, t)
		}
		if safety, err = Begin(db, opt.Safety.Partial, plan); err != nil {
			return res, err
		}
		defer func() {
			if safety != nil {
				safety.Abort()
			}
		}()
	}
	conflicts, err = applyRows(db, g, cs, names, opt.Force)
	if err != nil {
		return res, err
	}
	res.Rows += csRows
	if len(conflicts) > 0 && !opt.Force {
		return res, &ConflictError{Conflicts: conflicts}
	}
	res.Overwritten = append(res.Overwritten, conflicts...)
	if opt.DryRun {
		return res, nil // rolled back
	}
	if safety != nil {
		// Synced and named before the apply commits, as a statement's
		// record is: a committed restore always has its way back.
		if _, err := safety.Finish(Info{Taken: opt.Safety.Taken, Statement: opt.Safety.Statement, Reason: "the state before restore applied " + path}); err != nil {
			return res, err
		}
		kept, err := opt.Safety.Keep(opt.Safety.Partial)
		if err != nil {
			return res, err
		}
		safety = nil
		res.Safety = kept
	}
	if err := tx.Commit(); err != nil {
		if res.Safety != "" {
			// A record of a change that never happened.
			_ = os.Remove(res.Safety)
			res.Safety = ""
		}
		return res, err
	}
	return res, nil
}

// setUpConn readies db for an apply: foreign keys and triggers off (they
// would act again on rows being put back), defensive mode on (it keeps
// everything the record runs off the shadow tables of virtual tables and
// off the schema's raw rows), and the file's growth bounded by maxGrowth
// bytes. The function it returns undoes all of it, last first.
func setUpConn(db *rawsqlite.Conn, maxGrowth int64) (func(), error) {
	var undo []func()
	settle := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if err := db.Exec("PRAGMA foreign_keys=OFF"); err != nil {
		return nil, err
	}
	undo = append(undo, func() { _ = db.Exec("PRAGMA foreign_keys=ON") })
	if _, err := db.DBConfig(rawsqlite.ConfigEnableTrigger, false); err != nil {
		settle()
		return nil, err
	}
	undo = append(undo, func() { _, _ = db.DBConfig(rawsqlite.ConfigEnableTrigger, true) })
	if old, err := db.DBConfig(rawsqlite.ConfigDefensive, true); err == nil {
		undo = append(undo, func() { _, _ = db.DBConfig(rawsqlite.ConfigDefensive, old) })
	}
	restoreGrowth, err := limitGrowth(db, maxGrowth)
	if err != nil {
		settle()
		return nil, err
	}
	return func() { restoreGrowth(); settle() }, nil
}

// applyRows applies the changeset under the guard: a row already as the
// record would put it back is no conflict; any other conflict is
// returned, and with force a changed row is overwritten. An error that is
// the record's fault (a refusal of the guard, a changeset SQLite cannot
// apply) is a *HostileError.
func applyRows(db *rawsqlite.Conn, g *guard, cs []byte, names map[string][]string, force bool) ([]Conflict, error) {
	var conflicts []Conflict
	err := db.ApplyChangeset(cs, func(kind int, ch rawsqlite.Change) int {
		c, same := describe(kind, ch, names[ch.Table])
		if same {
			return rawsqlite.ConflictOmit
		}
		conflicts = append(conflicts, c)
		if force && (kind == rawsqlite.ConflictData || kind == rawsqlite.ConflictConflict) {
			return rawsqlite.ConflictReplace
		}
		return rawsqlite.ConflictOmit
	})
	if err != nil {
		if v := g.take(); v != "" {
			return nil, hostile("its changeset: %s", v)
		}
		if c := rawsqlite.ErrorCode(err) & 0xff; c != rawsqlite.ResultInterrupt && c != rawsqlite.ResultFull && c != rawsqlite.ResultBusy && c != rawsqlite.ResultLocked && c != rawsqlite.ResultNoMem && c != rawsqlite.ResultIOErr {
			return nil, hostile("its changeset cannot be applied (%s)", sqliteWhy(err))
		}
		return nil, err
	}
	return conflicts, nil
}

// readContents reads what the record would do: its changeset (the rows)
// and its undo_schema steps (the objects), checked against the record's
// own tables.
func readContents(rec *rawsqlite.Conn) ([]byte, []step, error) {
	var cs []byte
	err := rec.Each("SELECT data FROM undo_changeset ORDER BY seq", func(st *rawsqlite.Stmt) error {
		if t := st.ColumnType(0); t != rawsqlite.TypeBlob && t != rawsqlite.TypeNull {
			return hostile("undo_changeset holds a value that is not a changeset")
		}
		cs = append(cs, st.ColumnBlob(0)...)
		return nil
	})
	if err != nil {
		return nil, nil, hostileRead(err)
	}
	var steps []step
	err = rec.Each("SELECT action, type, name, tbl_name, sql, copy, columns, sequence FROM undo_schema ORDER BY seq", func(st *rawsqlite.Stmt) error {
		s := step{action: st.ColumnText(0), typ: st.ColumnText(1), name: st.ColumnText(2), table: st.ColumnText(3), sql: st.ColumnText(4), copyName: st.ColumnText(5)}
		if st.ColumnType(7) == rawsqlite.TypeInteger {
			s.seq, s.hasSeq = st.ColumnInt64(7), true
		}
		if c := st.ColumnText(6); c != "" {
			s.columns = strings.Split(c, "\x1f")
		}
		steps = append(steps, s)
		return nil
	})
	if err != nil {
		return nil, nil, hostileRead(err)
	}
	if err := checkSteps(rec, steps); err != nil {
		return nil, nil, err
	}
	return cs, steps, nil
}

// changesetTables lists the tables the changeset changes, in the order
// it names them, with the number of primary-key columns each change gives,
// and counts each one's changes; a server or SQLite table is refused.
func changesetTables(cs []byte) (shapes map[string]int, order []string, rows map[string]int64, err error) {
	shapes = map[string]int{}
	rows = map[string]int64{}
	err = rawsqlite.EachChange(cs, func(ch rawsqlite.Change) error {
		if IsServerName(ch.Table) {
			return hostile("its changeset would change %s, which belongs to the server or to SQLite", Printable(ch.Table))
		}
		if _, ok := shapes[ch.Table]; !ok {
			order = append(order, ch.Table)
		}
		shapes[ch.Table] = len(ch.PK)
		rows[ch.Table]++
		return nil
	})
	if err != nil {
		var h *HostileError
		if errors.As(err, &h) {
			return nil, nil, nil, err
		}
		return nil, nil, nil, hostile("its changeset is corrupt or not a changeset (%s)", sqliteWhy(err))
	}
	return shapes, order, rows, nil
}

// planSteps compares the record's steps with the schema now: skip marks
// the steps already done (an object already as the record would recreate
// it, or already gone), conflicts the objects changed since.
func planSteps(db *rawsqlite.Conn, steps []step) (skip []bool, conflicts []Conflict, err error) {
	now, err := readSchema(db)
	if err != nil {
		return nil, nil, err
	}
	// An object already as the record would recreate it is left alone (a
	// record applied twice, or one whose statement never committed), and
	// so is a drop of it.
	restored := func(typ, name string) bool {
		cur, ok := now[object{Type: typ, Name: name}.key()]
		for _, s := range steps {
			if ok && s.action == "create" && rawsqlite.FoldName(s.typ) == rawsqlite.FoldName(typ) && rawsqlite.FoldName(s.name) == rawsqlite.FoldName(name) && s.sql == cur.SQL {
				return true
			}
		}
		return false
	}
	skip = make([]bool, len(steps))
	var drops []step
	for i, s := range steps {
		cur, exists := now[object{Type: s.typ, Name: s.name}.key()]
		if s.action != "drop" {
			continue
		}
		switch {
		case !exists || restored(s.typ, s.name):
			skip[i] = true
		case cur.SQL != s.sql:
			conflicts = append(conflicts, Conflict{Table: s.name, What: fmt.Sprintf("the %s was changed since; now %s", s.typ, oneLine(cur.SQL))})
		default:
			drops = append(drops, s)
		}
	}
	for i, s := range steps {
		cur, exists := now[object{Type: s.typ, Name: s.name}.key()]
		if s.action != "create" || !exists || willDrop(drops, cur) {
			continue
		}
		if cur.SQL == s.sql {
			skip[i] = true
			continue
		}
		conflicts = append(conflicts, Conflict{Table: s.name, What: fmt.Sprintf("a %s of this name exists again: %s", s.typ, oneLine(cur.SQL))})
	}
	return skip, conflicts, nil
}

// runSteps drops and recreates the record's objects (all but those skip
// marks), under the guard, with their rows and AUTOINCREMENT counters,
// and returns the objects it created, every step with the rows it put
// back (skipped ones marked), and the rows in all. With force an object
// in the way is dropped first.
func runSteps(db, rec *rawsqlite.Conn, g *guard, steps []step, skip []bool, force bool) (created []Object, done []ObjectStep, rows int64, err error) {
	for i, s := range steps {
		d := ObjectStep{Action: s.action, Type: s.typ, Name: s.name, Table: s.table, Skipped: skip[i]}
		if skip[i] {
			done = append(done, d)
			continue
		}
		switch s.action {
		case "drop":
			if err := execOne(db, g, "DROP "+strings.ToUpper(s.typ)+" IF EXISTS "+rawsqlite.QuoteIdent(s.name)); err != nil {
				return created, done, rows, fmt.Errorf("drop %s %s: %w", s.typ, Printable(s.name), err)
			}
		case "create":
			if force {
				if err := execOne(db, g, "DROP "+strings.ToUpper(s.typ)+" IF EXISTS "+rawsqlite.QuoteIdent(s.name)); err != nil {
					return created, done, rows, fmt.Errorf("drop %s %s: %w", s.typ, Printable(s.name), err)
				}
			}
			o := Object{Type: s.typ, Name: s.name, Table: s.table, SQL: s.sql}
			if err := checkedCreate(db, g, o); err != nil {
				return created, done, rows, err
			}
			created = append(created, o)
			if s.copyName != "" {
				cols := make([]string, len(s.columns))
				for i, c := range s.columns {
					cols[i] = rawsqlite.QuoteIdent(c)
				}
				list := strings.Join(cols, ", ")
				if err := copyRows(rec, "SELECT "+list+" FROM "+rawsqlite.QuoteIdent(s.copyName), db, "INSERT INTO "+rawsqlite.QuoteIdent(s.name)+"("+list+") VALUES ("+placeholders(len(cols))+")"); err != nil {
					return created, done, rows, g.explain(fmt.Errorf("put the rows of %s back: %w", Printable(s.name), err), "the rows of "+o.label())
				}
				if d.Rows, err = scalar(rec, "SELECT count(*) FROM "+rawsqlite.QuoteIdent(s.copyName)); err != nil {
					return created, done, rows, err
				}
				rows += d.Rows
			}
			if s.hasSeq {
				g.upkeep = true
				err := putSequence(db, s.name, s.seq)
				g.upkeep = false
				if err != nil {
					return created, done, rows, g.explain(fmt.Errorf("put the AUTOINCREMENT counter of %s back: %w", Printable(s.name), err), "the counter of "+o.label())
				}
			}
		}
		done = append(done, d)
	}
	return created, done, rows, nil
}

// targetTables checks that every table the changeset names is there, as
// a plain table with the record's columns (SQLite would skip one that is
// not), and returns their columns by name.
func targetTables(db *rawsqlite.Conn, order []string, shapes map[string]int) (map[string][]string, error) {
	names := map[string][]string{}
	var conflicts []Conflict
	for _, t := range order {
		n := shapes[t]
		kind := ""
		if err := db.Each("SELECT type FROM pragma_table_list WHERE schema = 'main' AND name = ?1", func(st *rawsqlite.Stmt) error {
			kind = st.ColumnText(0)
			return nil
		}, t); err != nil {
			return nil, err
		}
		if kind != "" && kind != "table" {
			return nil, hostile("its changeset would change %s, a %s, which no statement's record holds", Printable(t), kind)
		}
		cols, err := columnsOf(db, t)
		if err != nil {
			return nil, err
		}
		names[t] = cols
		switch {
		case len(cols) == 0:
			conflicts = append(conflicts, Conflict{Table: t, What: "the table no longer exists"})
		case len(cols) != n && len(cols)+1 != n:
			conflicts = append(conflicts, Conflict{Table: t, What: fmt.Sprintf("the table has %d columns now, the record %d", len(cols), n)})
		}
	}
	if len(conflicts) > 0 {
		// These cannot be forced: the rows have nowhere to go.
		return nil, &ConflictError{Conflicts: conflicts}
	}
	return names, nil
}

// step is one row of undo_schema.
type step struct {
	action, typ, name, table, sql, copyName string
	columns                                 []string
	seq                                     int64 // the AUTOINCREMENT counter, when hasSeq
	hasSeq                                  bool
}

// willDrop reports whether an earlier drop step removes the object now
// there: itself, or for an index or trigger, its table.
func willDrop(steps []step, cur object) bool {
	for _, s := range steps {
		if s.action != "drop" {
			continue
		}
		if (rawsqlite.FoldName(s.typ) == rawsqlite.FoldName(cur.Type) && rawsqlite.FoldName(s.name) == rawsqlite.FoldName(cur.Name)) ||
			(s.typ == "table" && cur.Type != "view" && rawsqlite.FoldName(s.name) == rawsqlite.FoldName(cur.Table)) {
			return true
		}
	}
	return false
}

// putSequence sets table's AUTOINCREMENT counter to at least seq.
func putSequence(db *rawsqlite.Conn, table string, seq int64) error {
	n, err := scalar(db, "SELECT count(*) FROM sqlite_sequence WHERE name = ?1", table)
	if err != nil {
		return err
	}
	if n == 0 {
		return execArgs(db, "INSERT INTO sqlite_sequence(name, seq) VALUES (?1, ?2)", table, seq)
	}
	return execArgs(db, "UPDATE sqlite_sequence SET seq = max(seq, ?2) WHERE name = ?1", table, seq)
}

// describe words a conflict; same is true when the row is already as the
// undo would leave it (nothing to do).
func describe(kind int, ch rawsqlite.Change, cols []string) (c Conflict, same bool) {
	c.Table = ch.Table
	key := ch.Old
	if ch.Op == rawsqlite.OpInsert {
		key = ch.New
	}
	c.Key = keyText(ch.PK, key, cols)
	switch kind {
	case rawsqlite.ConflictConflict:
		// Putting a deleted row back, and a row with its key is there.
		if equalRow(ch.New, ch.Conflict) {
			return c, true
		}
		c.What = "a row with this key exists again: " + diffText(ch.New, ch.Conflict, cols, "the record has")
	case rawsqlite.ConflictData:
		if ch.Op == rawsqlite.OpUpdate && equalSet(ch.New, ch.Conflict) {
			return c, true
		}
		c.What = "changed since: " + diffText(ch.Old, ch.Conflict, cols, "the statement left")
	case rawsqlite.ConflictNotFound:
		if ch.Op == rawsqlite.OpDelete {
			return c, true // the row the statement added is gone already
		}
		c.What = "deleted since; the record would set " + valuesText(ch.New, cols)
	case rawsqlite.ConflictConstraint:
		c.What = "putting it back would break a constraint (another row holds a unique value it has)"
	default:
		c.What = "putting the rows back would break a foreign key"
	}
	return c, false
}

func colName(cols []string, i, n int) string {
	if len(cols)+1 == n {
		// The session keyed a table without a PRIMARY KEY by its rowid.
		if i == 0 {
			return "rowid"
		}
		i--
	}
	if i < len(cols) {
		return cols[i]
	}
	return "column " + strconv.Itoa(i)
}

func keyText(pk []bool, vals []rawsqlite.Value, cols []string) string {
	var parts []string
	for i, isKey := range pk {
		if isKey && i < len(vals) {
			parts = append(parts, colName(cols, i, len(pk))+"="+valueText(vals[i]))
		}
	}
	return strings.Join(parts, ", ")
}

// diffText lists the columns where now differs from want.
func diffText(want, now []rawsqlite.Value, cols []string, wantLabel string) string {
	var parts []string
	for i := range now {
		if i < len(want) && want[i].Set && !equalValue(want[i], now[i]) {
			parts = append(parts, fmt.Sprintf("%s is %s, %s %s", colName(cols, i, len(now)), valueText(now[i]), wantLabel, valueText(want[i])))
		}
	}
	if len(parts) == 0 {
		return "values differ"
	}
	return strings.Join(parts, "; ")
}

func valuesText(vals []rawsqlite.Value, cols []string) string {
	var parts []string
	for i, v := range vals {
		if v.Set {
			parts = append(parts, colName(cols, i, len(vals))+"="+valueText(v))
		}
	}
	return strings.Join(parts, ", ")
}

func valueText(v rawsqlite.Value) string {
	switch v.Type {
	case rawsqlite.TypeInteger:
		return strconv.FormatInt(v.Int, 10)
	case rawsqlite.TypeFloat:
		return strconv.FormatFloat(v.Float, 'g', -1, 64)
	case rawsqlite.TypeText:
		s := string(v.Bytes)
		if len(s) > 40 {
			s = s[:40] + "..."
		}
		return "'" + strings.ReplaceAll(s, "'", "''") + "'"
	case rawsqlite.TypeBlob:
		return fmt.Sprintf("<blob %d bytes>", len(v.Bytes))
	}
	return "NULL"
}

func equalValue(a, b rawsqlite.Value) bool {
	if a.Type != b.Type {
		return false
	}
	switch a.Type {
	case rawsqlite.TypeInteger:
		return a.Int == b.Int
	case rawsqlite.TypeFloat:
		return a.Float == b.Float || (math.IsNaN(a.Float) && math.IsNaN(b.Float))
	case rawsqlite.TypeNull:
		return true
	}
	return bytes.Equal(a.Bytes, b.Bytes)
}

func equalRow(a, b []rawsqlite.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if !equalValue(a[i], b[i]) {
			return false
		}
	}
	return true
}

// equalSet compares only the values of want that are set (an UPDATE's
// changed columns).
func equalSet(want, now []rawsqlite.Value) bool {
	for i := range want {
		if want[i].Set && (i >= len(now) || !equalValue(want[i], now[i])) {
			return false
		}
	}
	return true
}

func oneLine(sql string) string {
	s := strings.Join(strings.Fields(sql), " ")
	if len(s) > 80 {
		s = s[:80] + "..."
	}
	return s
}
