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
	// writes maps a table the statement itself writes (by folded name) to
	// its name and the kinds of write: the virtual tables among them are
	// counted apart, since the preupdate hook never sees their rows.
	writes map[string]*tableWrite
	rows   map[rowKey]int64
}

// tableWrite is how the statement itself writes one table.
type tableWrite struct {
	name                      string
	inserts, updates, deletes bool
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
	if r.Trigger == "" && r.DB == "main" {
		switch r.Action {
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete:
			f := rawsqlite.FoldName(r.Arg1)
			w := d.writes[f]
			if w == nil {
				w = &tableWrite{name: r.Arg1}
				d.writes[f] = w
			}
			w.inserts = w.inserts || r.Action == rawsqlite.AuthInsert
			w.updates = w.updates || r.Action == rawsqlite.AuthUpdate
			w.deletes = w.deletes || r.Action == rawsqlite.AuthDelete
		}
	}
	if r.Trigger != "" {
		switch r.Action {
		case rawsqlite.AuthInsert, rawsqlite.AuthUpdate, rawsqlite.AuthDelete:
			t := rawsqlite.FoldName(r.Arg1)
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
		if seen.Action == o.Action && rawsqlite.FoldName(seen.Name) == rawsqlite.FoldName(o.Name) {
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
	d := &dryRun{triggerWrites: map[string][]string{}, writes: map[string]*tableWrite{}, rows: map[rowKey]int64{}}
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
	tx, err := ex.conn.BeginImmediate()
	if err != nil {
		return nil, err
	}
	defer tx.Rollback()
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
			n, err := ex.scalarInt("SELECT count(*) FROM main." + rawsqlite.QuoteIdent(o.Name))
			if err != nil {
				return nil, err
			}
			d.objects[i].Rows = n
		}
	}
	kinds, err := ex.tableKinds()
	if err != nil {
		return nil, err
	}
	vt := ex.virtualWrites(d, kinds)
	total := ex.conn.TotalChanges()
	returning, changes, err := ex.apply(st, sum)
	if err != nil {
		return nil, err
	}
	vtChanges := ex.countVirtual(vt, kinds, changes, ex.conn.TotalChanges()-total)
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
	if p.Tables, err = ex.tableChanges(d, kinds.shadow, vtChanges); err != nil {
		return nil, err
	}
	if ex.req.Preview.CommitIfHarmless && ex.req.Snapshot == nil && harmless(p) {
		if err := tx.Commit(); err != nil {
			return nil, err
		}
		return ex.written(sum, changes, returning, nil, nil), nil
	}
	return &ipc.Response{Text: "ok: dry run rolled back", Rows: changes, Preview: p}, nil
}

// harmless reports a preview that deletes, overwrites, drops and alters
// nothing, and counted every row.
func harmless(p *ipc.Preview) bool {
	for _, t := range p.Tables {
		if t.Deleted > 0 || t.Updated > 0 || t.Uncounted {
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
func (ex *executor) tableChanges(d *dryRun, shadow map[string]bool, virtual []ipc.TableChange) ([]ipc.TableChange, error) {
	var err error
	dropped := map[string]bool{}
	for _, o := range d.objects {
		if o.Action == ipc.ObjectDrop {
			dropped[rawsqlite.FoldName(o.Name)] = true
		}
	}
	changedOps := map[string]map[int]bool{}
	for k := range d.rows {
		f := rawsqlite.FoldName(k.table)
		if changedOps[f] == nil {
			changedOps[f] = map[int]bool{}
		}
		changedOps[f][k.op] = true
	}
	type key struct{ table, via string }
	sums := map[key]*ipc.TableChange{}
	var order []key
	for k, n := range d.rows {
		f := rawsqlite.FoldName(k.table)
		if strings.HasPrefix(f, "sqlite_") || shadow[f] || dropped[f] {
			continue
		}
		via := ""
		var triggers []string
		if k.indirect {
			if via, triggers, err = ex.cause(k, d, changedOps); err != nil {
				return nil, err
			}
		}
		kk := key{k.table, via}
		tc := sums[kk]
		if tc == nil {
			tc = &ipc.TableChange{Table: k.table, Via: via, Triggers: triggers}
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
	for _, v := range virtual {
		kk := key{v.Table, v.Via}
		sums[kk] = &v
		order = append(order, kk)
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
// tell them apart in the hook, so the schema decides. triggers lists the
// triggers named in via.
func (ex *executor) cause(k rowKey, d *dryRun, changedOps map[string]map[int]bool) (via string, triggers []string, err error) {
	err = ex.each("SELECT \"table\", on_update, on_delete FROM pragma_foreign_key_list(?)", func(st *rawsqlite.Stmt) error {
		if via != "" {
			return nil
		}
		parent := changedOps[rawsqlite.FoldName(st.ColumnText(0))]
		onUpdate, onDelete := st.ColumnText(1), st.ColumnText(2)
		if parent[rawsqlite.ChangeDelete] && actionChanges(onDelete, k.op) {
			via = "ON DELETE " + onDelete
		} else if parent[rawsqlite.ChangeUpdate] && actionChanges(onUpdate, k.op) {
			via = "ON UPDATE " + onUpdate
		}
		return nil
	}, k.table)
	if err != nil || via != "" {
		return via, nil, err
	}
	if names := d.triggerWrites[rawsqlite.FoldName(k.table)]; len(names) > 0 {
		return "trigger " + strings.Join(names, ", "), names, nil
	}
	return "trigger", nil, nil
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

// tableKinds are the main schema's shadow and virtual tables, by folded
// name.
type tableKinds struct {
	shadow  map[string]bool
	virtual map[string]string // folded name: name
}

func (ex *executor) tableKinds() (tableKinds, error) {
	k := tableKinds{shadow: map[string]bool{}, virtual: map[string]string{}}
	err := ex.each("SELECT name, type FROM pragma_table_list WHERE schema='main' AND type IN ('shadow', 'virtual')", func(st *rawsqlite.Stmt) error {
		if st.ColumnText(1) == "shadow" {
			k.shadow[rawsqlite.FoldName(st.ColumnText(0))] = true
		} else {
			k.virtual[rawsqlite.FoldName(st.ColumnText(0))] = st.ColumnText(0)
		}
		return nil
	})
	return k, err
}

// virtualCount is one virtual table the statement or its triggers write,
// with its rows before the run (rows < 0: it could not be counted).
type virtualCount struct {
	name     string
	write    *tableWrite // nil when only triggers write it
	triggers []string
	rows     int64
}

// virtualWrites counts, before the run, the rows of every virtual table
// the statement or its triggers write. The preupdate hook never sees a
// virtual table's rows (only its shadow tables', which the module writes
// through statements of its own), so they are counted here instead.
func (ex *executor) virtualWrites(d *dryRun, kinds tableKinds) []virtualCount {
	if len(kinds.virtual) == 0 {
		return nil
	}
	var out []virtualCount
	for f, w := range d.writes {
		if kinds.virtual[f] != "" {
			out = append(out, virtualCount{name: w.name, write: w, triggers: d.triggerWrites[f]})
		}
	}
	for f, names := range d.triggerWrites {
		if kinds.virtual[f] != "" && d.writes[f] == nil {
			out = append(out, virtualCount{name: kinds.virtual[f], triggers: names})
		}
	}
	slices.SortFunc(out, func(a, b virtualCount) int { return cmp.Compare(a.name, b.name) })
	for i := range out {
		out[i].rows = ex.virtualRows(out[i].name, kinds)
	}
	return out
}

// virtualRows is how many rows a virtual table holds: for FTS5, the
// documents its index holds (its docsize table, which an external-content
// table's count(*) would not read), else count(*); -1 when it cannot be
// counted (a module this SQLite lacks, say).
func (ex *executor) virtualRows(name string, kinds tableKinds) int64 {
	sql := "SELECT count(*) FROM main." + rawsqlite.QuoteIdent(name)
	if kinds.shadow[rawsqlite.FoldName(name+"_docsize")] {
		sql = "SELECT count(*) FROM main." + rawsqlite.QuoteIdent(name+"_docsize")
	}
	n, err := ex.scalarInt(sql)
	if err != nil {
		ex.log.Debug("a virtual table could not be counted for the preview", "table", name, "error", err)
		return -1
	}
	return n
}

// countVirtual turns the counts before the run into the rows each virtual
// table changed. Rows the statement itself changes are exact: SQLite
// counts every row it hands the module (sqlite3_changes). An FTS command
// (INSERT INTO f(f) VALUES('delete-all')) is one such call that removes
// many rows: the net change counts those. What triggers do to a virtual
// table is seen only as its net change, so such a table is marked
// Uncounted, as is one the statement writes in ways its counts do not
// explain (a REPLACE over an existing row, a command). total is how
// many rows the run changed in all (sqlite3_total_changes): when it is
// no more than the statement's own, no trigger wrote anything.
func (ex *executor) countVirtual(vt []virtualCount, kinds tableKinds, changes, total int64) []ipc.TableChange {
	var out []ipc.TableChange
	for _, v := range vt {
		after := int64(-1)
		if v.rows >= 0 {
			after = ex.virtualRows(v.name, kinds)
		}
		counted := v.rows >= 0 && after >= 0
		net := after - v.rows
		tc := ipc.TableChange{Table: v.name}
		if w := v.write; w != nil {
			// The statement writes one table: all its changes are this
			// table's.
			switch {
			case w.deletes:
				tc.Deleted = changes
				if counted && -net > changes {
					tc.Deleted = -net
				}
			case w.updates && !w.inserts:
				tc.Updated = changes
			case !counted:
				tc.Uncounted = changes > 0
			case net < 0:
				tc.Deleted, tc.Net = -net, true
			default:
				tc.Inserted, tc.Net = net, true
				tc.Uncounted = changes > net
			}
		} else {
			if total <= changes {
				continue // no trigger wrote anything
			}
			tc.Via, tc.Triggers = "trigger "+strings.Join(v.triggers, ", "), v.triggers
			tc.Uncounted, tc.Net = true, counted
			switch {
			case counted && net < 0:
				tc.Deleted = -net
			case counted && net > 0:
				tc.Inserted = net
			}
		}
		if tc.Deleted > 0 || tc.Updated > 0 || tc.Inserted > 0 || tc.Uncounted {
			out = append(out, tc)
		}
	}
	return out
}

// recount holds the rows, before the real run, of the tables the request
// asks it to count again (ipc.Request.Recount).
type recount struct {
	kinds  tableKinds
	before map[string]int64
}

// startRecount counts the tables of Request.Recount before the statement
// runs; nil when the request names none.
func (ex *executor) startRecount() *recount {
	if len(ex.req.Recount) == 0 {
		return nil
	}
	kinds, err := ex.tableKinds()
	if err != nil {
		return nil
	}
	r := &recount{kinds: kinds, before: map[string]int64{}}
	for _, name := range ex.req.Recount {
		if n := ex.virtualRows(name, kinds); n >= 0 {
			r.before[name] = n
		}
	}
	return r
}

// finish counts them again after the statement ran.
func (r *recount) finish(ex *executor) map[string]int64 {
	if r == nil {
		return nil
	}
	out := map[string]int64{}
	for name, before := range r.before {
		if n := ex.virtualRows(name, r.kinds); n >= 0 {
			out[name] = n - before
		}
	}
	return out
}
