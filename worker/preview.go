package worker

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/ipc"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/policy"
	"github.com/mcp-sqlite-memory/mcp-sqlite-memory/rawsqlite"
)

// dryRun watches one statement's dry run (SPEC 5.5): the schema objects
// its compilation names (from the authorizer) and the rows its run changes
// (from the preupdate hook), triggers and foreign-key actions included.
type dryRun struct {
	// compiling is true while the agent's statement compiles: only then
	// are its DDL actions its own (a virtual table creating its shadow
	// tables does so while the statement steps).
	compiling bool
	objects   []ipc.ObjectChange
	// triggerWrites maps a table to the triggers whose bodies write it.
	triggerWrites map[string][]string
	rows          map[rowKey]int64
}

type rowKey struct {
	table    string
	op       int
	indirect bool
}

// objectActions maps the authorizer's DDL actions to what a preview says.
var objectActions = map[int][2]string{
	rawsqlite.AuthCreateTable:   {ipc.ObjectCreate, "TABLE"},
	rawsqlite.AuthCreateIndex:   {ipc.ObjectCreate, "INDEX"},
	rawsqlite.AuthCreateTrigger: {ipc.ObjectCreate, "TRIGGER"},
	rawsqlite.AuthCreateView:    {ipc.ObjectCreate, "VIEW"},
	rawsqlite.AuthCreateVTable:  {ipc.ObjectCreate, "VIRTUAL TABLE"},
	rawsqlite.AuthDropTable:     {ipc.ObjectDrop, "TABLE"},
	rawsqlite.AuthDropIndex:     {ipc.ObjectDrop, "INDEX"},
	rawsqlite.AuthDropTrigger:   {ipc.ObjectDrop, "TRIGGER"},
	rawsqlite.AuthDropView:      {ipc.ObjectDrop, "VIEW"},
	rawsqlite.AuthDropVTable:    {ipc.ObjectDrop, "VIRTUAL TABLE"},
	rawsqlite.AuthAlterTable:    {ipc.ObjectAlter, "TABLE"},
}

// authorized records what an allowed authorizer request tells about the
// statement. It runs inside the authorizer and must not use the Conn.
func (d *dryRun) authorized(r rawsqlite.AuthRequest) {
	if !d.compiling || r.Nested {
		return
	}
	if r.Trigger != "" {
		switch r.Action {
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete:
			t := policy.FoldName(r.Arg1)
			if !slices.Contains(d.triggerWrites[t], r.Trigger) {
				d.triggerWrites[t] = append(d.triggerWrites[t], r.Trigger)
			}
		}
		return
	}
	a, ok := objectActions[r.Action]
	if !ok {
		return
	}
	o := ipc.ObjectChange{Action: a[0], Type: a[1], Name: r.Arg1}
	switch r.Action {
	case rawsqlite.AuthCreateIndex, rawsqlite.AuthCreateTrigger, rawsqlite.AuthDropIndex, rawsqlite.AuthDropTrigger:
		o.Table = r.Arg2
	case rawsqlite.AuthAlterTable:
		o.Name = r.Arg2
	}
	for i, seen := range d.objects {
		if seen.Action == o.Action && policy.FoldName(seen.Name) == policy.FoldName(o.Name) {
			// DROP of a virtual table is reported as both kinds of drop.
			if o.Type == "VIRTUAL TABLE" {
				d.objects[i].Type = o.Type
			}
			return
		}
	}
	d.objects = append(d.objects, o)
}

// changed counts one row change of the statement's run.
func (d *dryRun) changed(r rawsqlite.RowChange) {
	if r.DB != "main" {
		return
	}
	d.rows[rowKey{table: r.Table, op: r.Op, indirect: r.Depth > 0}]++
}

// previewQuery compiles and dry-runs the agent's statement. A statement
// that only reads is answered as query would; a harmless write may be
// committed (PreviewRequest.CommitIfHarmless).
func (ex *executor) previewQuery() (*ipc.Response, error) {
	d := &dryRun{triggerWrites: map[string][]string{}, rows: map[rowKey]int64{}}
	ex.dry = d
	defer func() { ex.dry = nil }()
	st, sum, reads, err := ex.prepareAgent()
	if err != nil {
		return nil, err
	}
	defer st.Finalize()
	if reads {
		return ex.read(st, sum)
	}
	// SQLite empties a table a DELETE without WHERE names at once (its
	// truncate optimization, the Clear instruction) instead of deleting row
	// by row, so the preupdate hook never sees those rows: dryRunWrite
	// counts them from sqlite3_changes. A hook set before compiling would turn the
	// optimization off and make the dry run many times slower than the
	// statement.
	truncated, err := ex.truncatedTables(st)
	if err != nil {
		return nil, err
	}
	if err := ex.conn.SetPreUpdateHook(func(r rawsqlite.RowChange) {
		if ex.agentPhase {
			d.changed(r)
		}
	}); err != nil {
		return nil, err
	}
	defer func() { _ = ex.conn.SetPreUpdateHook(nil) }()
	return ex.dryRunWrite(st, sum, d, truncated)
}

// truncatedTables lists the tables st empties with SQLite's truncate
// optimization (a Clear instruction on a table's root page); the count
// of their rows comes from sqlite3_changes, which SQLite keeps for them.
func (ex *executor) truncatedTables(st *rawsqlite.Stmt) ([]string, error) {
	ops, err := ex.program(st)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, op := range ops {
		if op.Opcode != "Clear" || op.P2 != 0 {
			continue
		}
		err := ex.each("SELECT name FROM sqlite_schema WHERE type = 'table' AND rootpage = ?", func(s *rawsqlite.Stmt) error {
			names = append(names, s.ColumnText(0))
			return nil
		}, fmt.Sprint(op.P1))
		if err != nil {
			return nil, err
		}
	}
	return names, nil
}

// dryRunWrite runs st in a transaction that is always rolled back (but for
// a harmless write the request lets commit) and measures what it changed.
// The write lock is held only while it runs.
func (ex *executor) dryRunWrite(st *rawsqlite.Stmt, sum policy.Summary, d *dryRun, truncated []string) (*ipc.Response, error) {
	if err := ex.exec("BEGIN IMMEDIATE"); err != nil {
		return nil, err
	}
	committed := false
	defer func() {
		if !committed {
			_ = ex.exec("ROLLBACK")
		}
	}()
	p := &ipc.Preview{}
	if s := ex.req.Snapshot; s != nil && s.Keep > 0 {
		// A full copy is the whole file; an undo record costs what the
		// statement changes, recorded during the real run (a statement
		// the session cannot capture still gets a full copy then).
		bytes, err := ex.fileBytes()
		if err != nil {
			return nil, err
		}
		kind := ipc.SnapshotFull
		if undo, _, err := ex.undoWanted(); err != nil {
			return nil, err
		} else if undo {
			kind = ipc.SnapshotUndo
		}
		p.Snapshot = &ipc.SnapshotPlan{Kind: kind, Bytes: bytes}
	}
	for i, o := range d.objects {
		if o.Action == ipc.ObjectDrop && (o.Type == "TABLE" || o.Type == "VIRTUAL TABLE") {
			n, err := ex.scalarInt("SELECT count(*) FROM main." + quoteIdent(o.Name))
			if err != nil {
				return nil, err
			}
			d.objects[i].Rows = n
		}
	}
	returning, changes, err := ex.apply(st, sum)
	if err != nil {
		return nil, err
	}
	if len(truncated) == 1 {
		// SQLite truncates only a DELETE without WHERE, RETURNING,
		// triggers or foreign keys: the statement's own count is the
		// table's rows, which the hook did not see.
		var seen int64
		for k, n := range d.rows {
			if !k.indirect {
				seen += n
			}
		}
		if changes > seen {
			d.rows[rowKey{table: truncated[0], op: rawsqlite.ChangeDelete}] += changes - seen
		}
	}
	if !sum.Schema {
		// As the real run's answer counts them: DDL reports no rows.
		p.Changes = changes
	}
	p.Objects = d.objects
	if p.Tables, err = ex.tableChanges(d); err != nil {
		return nil, err
	}
	if ex.req.Preview.CommitIfHarmless && ex.req.Snapshot == nil && harmless(p) {
		if err := ex.exec("COMMIT"); err != nil {
			return nil, err
		}
		committed = true
		return ex.written(sum, changes, returning, nil), nil
	}
	return &ipc.Response{Text: "ok: dry run rolled back", Rows: changes, Preview: p}, nil
}

// harmless reports a preview that deletes, overwrites, drops and alters
// nothing.
func harmless(p *ipc.Preview) bool {
	for _, t := range p.Tables {
		if t.Deleted > 0 || t.Updated > 0 {
			return false
		}
	}
	for _, o := range p.Objects {
		if o.Action != ipc.ObjectCreate {
			return false
		}
	}
	return true
}

// fileBytes is the database's size in pages.
func (ex *executor) fileBytes() (int64, error) {
	pages, err := ex.scalarInt("PRAGMA page_count")
	if err != nil {
		return 0, err
	}
	size, err := ex.scalarInt("PRAGMA page_size")
	return pages * size, err
}

// tableChanges sums the dry run's row changes per table and cause, leaving
// out SQLite's schema table, virtual tables' shadow tables and tables the
// statement drops (their rows are counted with the DROP).
func (ex *executor) tableChanges(d *dryRun) ([]ipc.TableChange, error) {
	shadow, err := ex.shadowTables()
	if err != nil {
		return nil, err
	}
	dropped := map[string]bool{}
	for _, o := range d.objects {
		if o.Action == ipc.ObjectDrop {
			dropped[policy.FoldName(o.Name)] = true
		}
	}
	changedOps := map[string]map[int]bool{}
	for k := range d.rows {
		f := policy.FoldName(k.table)
		if changedOps[f] == nil {
			changedOps[f] = map[int]bool{}
		}
		changedOps[f][k.op] = true
	}
	type key struct{ table, via string }
	sums := map[key]*ipc.TableChange{}
	var order []key
	for k, n := range d.rows {
		f := policy.FoldName(k.table)
		if strings.HasPrefix(f, "sqlite_") || shadow[f] || dropped[f] {
			continue
		}
		via := ""
		if k.indirect {
			if via, err = ex.cause(k, d, changedOps); err != nil {
				return nil, err
			}
		}
		kk := key{k.table, via}
		tc := sums[kk]
		if tc == nil {
			tc = &ipc.TableChange{Table: k.table, Via: via}
			sums[kk] = tc
			order = append(order, kk)
		}
		switch k.op {
		case rawsqlite.ChangeDelete:
			tc.Deleted += n
		case rawsqlite.ChangeUpdate:
			tc.Updated += n
		case rawsqlite.ChangeInsert:
			tc.Inserted += n
		}
	}
	// The statement's own changes first, then by table name.
	slices.SortFunc(order, func(a, b key) int {
		if (a.via == "") != (b.via == "") {
			if a.via == "" {
				return -1
			}
			return 1
		}
		return cmp.Or(cmp.Compare(a.table, b.table), cmp.Compare(a.via, b.via))
	})
	var out []ipc.TableChange
	for _, k := range order {
		out = append(out, *sums[k])
	}
	return out, nil
}

// cause names what changed rows of a table indirectly: a foreign-key
// action of the table toward a parent the run changed, else the triggers
// whose bodies write the table. SQLite runs both as triggers and does not
// tell them apart in the hook, so the schema decides.
func (ex *executor) cause(k rowKey, d *dryRun, changedOps map[string]map[int]bool) (string, error) {
	var via string
	err := ex.each("SELECT \"table\", on_update, on_delete FROM pragma_foreign_key_list(?)", func(st *rawsqlite.Stmt) error {
		if via != "" {
			return nil
		}
		parent := changedOps[policy.FoldName(st.ColumnText(0))]
		onUpdate, onDelete := st.ColumnText(1), st.ColumnText(2)
		if parent[rawsqlite.ChangeDelete] && actionChanges(onDelete, k.op) {
			via = "ON DELETE " + onDelete
		} else if parent[rawsqlite.ChangeUpdate] && actionChanges(onUpdate, k.op) {
			via = "ON UPDATE " + onUpdate
		}
		return nil
	}, k.table)
	if err != nil || via != "" {
		return via, err
	}
	if names := d.triggerWrites[policy.FoldName(k.table)]; len(names) > 0 {
		return "trigger " + strings.Join(names, ", "), nil
	}
	return "trigger", nil
}

// actionChanges reports whether a foreign-key action makes changes of kind
// op in the child: CASCADE deletes on delete and updates on update, SET
// NULL and SET DEFAULT update.
func actionChanges(action string, op int) bool {
	switch action {
	case "CASCADE":
		return true
	case "SET NULL", "SET DEFAULT":
		return op == rawsqlite.ChangeUpdate
	}
	return false
}
